#include <durable/pqxx.hpp>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <memory>

#include "pg/migrations.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

TEST_CASE("ten engines starting at once in one process share one migration", "[pg][migrations]") {
  TestDb db;
  std::vector<std::thread> threads;
  std::atomic<int> up{0};
  for (int i = 0; i < 10; ++i) {
    threads.emplace_back([&] {
      Engine engine(db.options());
      register_all(engine);
      engine.start();
      ++up;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(up == 10);
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == pg::latest_schema_version());  // each migration once
}

TEST_CASE("an engine on a migrated schema keeps its data and migrates nothing again", "[pg][migrations]") {
  TestDb db;
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start_workflow<HelloWorkflow>("kept", "x");  // started, never run: no engine was started
  }
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<HelloWorkflow>("kept").result(30s) == "hello, x");
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == pg::latest_schema_version());  // each migration once
}

namespace {

// The schema as a build of version `version` left it: the frozen migrations up to it.
void build_schema_at(const TestDb& db, int version) {
  pqxx::connection conn(db.url());
  REQUIRE(pg::migrate(conn, db.schema(), version) == version);
}

// A run as every build up to version 8 started it: one row per workflow id, its start event, and
// its line in `runs`.
void start_run_before_v9(const TestDb& db, const std::string& id, const std::string& name, const std::string& input) {
  db.query(
      fmt::format("INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable) "
                  "VALUES ('{0}', gen_random_uuid(), '{1}', 'running', '{2}', 1, true); "
                  "INSERT INTO {{s}}.journal (workflow_id, seq, kind, data) "
                  "VALUES ('{0}', 0, 'workflow_started', jsonb_build_object('input', '{2}'::jsonb)); "
                  "INSERT INTO {{s}}.runs (run_id, workflow_id, name, status) "
                  "SELECT run_id, workflow_id, name, 'running' FROM {{s}}.workflows WHERE workflow_id = '{0}'",
                  id, name, input));
}

// A chain run as versions 14 and later wrote it: started, its first step scheduled and
// completed, not replayed since.
void insert_chain_after_first_step(const TestDb& db, const std::string& workflow_id, const std::string& run_id) {
  db.query(fmt::format(R"(
INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable) VALUES
  ('{0}', '{1}', 'chain', 'running', '1', 3, true);
INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data) VALUES
  ('{1}', 0, 'workflow_started', NULL, NULL, '{{{{"input": 1}}}}'),
  ('{1}', 1, 'activity_scheduled', 0, 'add', '{{{{"input": {{{{"a": 1, "b": 1}}}}}}}}'),
  ('{1}', 2, 'activity_completed', 0, 'add', '{{{{"result": 2, "attempts": 1}}}}'))",
                       workflow_id, run_id));
}

// A started engine that serves queue `tenants` (and the default queue).
std::unique_ptr<Engine> serving_tenants(const TestDb& db) {
  EngineOptions options = db.options();
  options.queues = {"default", "tenants"};
  auto engine = std::make_unique<Engine>(options);
  register_all(*engine);
  engine->start();
  return engine;
}

// The workflow ids of queue `tenants`' four runs in the order they ended, once all four completed.
std::vector<std::string> tenants_in_order_of_ending(const TestDb& db) {
  REQUIRE(wait_until(
      [&] {
        return db.count("SELECT count(*) FROM {s}.workflows WHERE queue = 'tenants' AND status = 'completed'") == 4;
      },
      30s));
  std::vector<std::string> order;
  for (const auto& row :
       db.query("SELECT workflow_id FROM {s}.workflows WHERE queue = 'tenants' ORDER BY ended_at, workflow_id")) {
    order.push_back(row[0].as<std::string>());
  }
  return order;
}

// A run of key `key` queued on queue `tenants` `minutes_ago` at `priority`, as versions 19 and
// later started it (run id ...0{serial}: unique within a test).
void queue_tenant_run(const TestDb& db, const std::string& workflow_id, const std::string& key, int serial,
                      int priority = 0, int minutes_ago = 0) {
  db.query(fmt::format(R"(
INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, queue, concurrency_key,
                             priority, queued, created_at)
  VALUES ('{0}', '018f0000-0000-7000-8000-{2:012}', 'slow_one', 'running', '5', 1, false, 'tenants', '{1}',
          {3}, true, now() - interval '{4} minutes');
INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  VALUES ('018f0000-0000-7000-8000-{2:012}', 0, 'workflow_started', '{{{{"input": 5}}}}'))",
                       workflow_id, key, serial, priority, minutes_ago));
}

}  // namespace

TEST_CASE("a schema at version 1 is upgraded in place, its runs kept", "[pg][migrations]") {
  TestDb db;
  build_schema_at(db, 1);
  start_run_before_v9(db, "from-v1", "hello", "\"y\"");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<HelloWorkflow>("from-v1").result(30s) == "hello, y");
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  CHECK(engine.schedules().list().empty());
}

TEST_CASE("an engine on a schema newer than this build refuses to start and is destroyed cleanly", "[pg][migrations]") {
  TestDb db;
  {
    Engine first(db.options());
    first.start();  // creates the schema
  }
  db.query("INSERT INTO {s}.schema_version (version) VALUES (" + std::to_string(pg::latest_schema_version() + 1) + ")");
  {
    Engine engine(db.options());
    register_all(engine);
    expect_throw<DatabaseError>([&] { engine.start(); }, "newer than this build knows", "upgrade durable");
  }  // its destructor stops an engine whose start() failed before any thread ran
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version() + 1);
}

TEST_CASE(
    "a schema at version 6 with runs in flight upgrades in place, and its runs complete under fresh fencing tokens",
    "[pg][migrations]") {
  TestDb db;
  build_schema_at(db, 6);
  for (int i = 0; i < 5; ++i) start_run_before_v9(db, "v6-run-" + std::to_string(i), "chain", std::to_string(i));
  db.query("SELECT setval('{s}.lease_tokens', 5000)");  // tokens of the old sequence handed out already
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  for (int i = 0; i < 5; ++i) CHECK(engine.workflow<ChainWorkflow>("v6-run-" + std::to_string(i)).result(30s) == i + 5);
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  // The leases taken since came from the new blocks, which start far above anything the old
  // sequence gave out (the sequence stayed where it was).
  CHECK(db.count("SELECT count(*) FROM {s}.lease_token_blocks WHERE next > 5000 + (1::bigint << 40)") == 1);
  CHECK(db.count("SELECT last_value FROM {s}.lease_tokens") == 5000);
  CHECK(db.count("SELECT count(*) FROM {completed} c") == 25);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks") == 0);  // completed tasks go (version 10)
  // Version 8: room on each page of tasks.
  CHECK(db.count("SELECT count(*) FROM pg_class WHERE oid = '{s}.tasks'::regclass AND "
                 "reloptions @> ARRAY['fillfactor=80']") == 1);
}

TEST_CASE("a schema at version 8 with runs in flight upgrades to runs with their own history, and they complete",
          "[pg][migrations]") {
  TestDb db;
  build_schema_at(db, 8);
  {
    // Rows a version-8 engine wrote: runs just started, with a task leased to a worker that is gone,
    // with tasks waiting, and ended ones (one id started twice).
    std::ifstream file(std::string(DURABLE_TEST_FIXTURES) + "/v8_runs_in_flight.sql");
    REQUIRE(file.good());
    std::string sql((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::string quoted = "\"" + db.schema() + "\"";
    for (auto at = sql.find("__SCHEMA__"); at != std::string::npos; at = sql.find("__SCHEMA__", at + quoted.size())) {
      sql.replace(at, std::string("__SCHEMA__").size(), quoted);
    }
    pqxx::connection conn(db.url());
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }
  const auto reused_runs =
      db.query("SELECT run_id::text FROM {s}.runs WHERE workflow_id = 'v8-reused' ORDER BY started_at");
  REQUIRE(reused_runs.size() == 2);
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  CHECK(engine.workflow<ChainWorkflow>("v8-fresh").result(30s) == 12);
  CHECK(engine.workflow<StepsWorkflow>("v8-running").result(30s) == 30);  // its step 1 again, after the lost lease
  CHECK(engine.workflow<ParallelWorkflow>("v8-pending").result(30s) == 6);
  CHECK(engine.workflow<ChainWorkflow>("v8-done").result(1s) == 15);
  {  // its successful attempts, recorded as rows then and as events now, are listed once each
    const RunId done = engine.workflow("v8-done").run_id();
    CHECK(engine.runs().history(done).attempts.size() == 5);
    CHECK(engine.runs().get(done).attempts == 5);
  }
  CHECK(engine.workflow<HelloWorkflow>("v8-reused").result(1s) == "hello, two");
  CHECK(engine.workflow("v8-reused").run_id() == RunId{reused_runs[1][0].as<std::string>()});
  // The earlier run of a reused id is a run of its own now (its history was deleted by version 8).
  CHECK(engine.workflow_run(RunId{reused_runs[0][0].as<std::string>()}).status() == WorkflowStatus::completed);
  CHECK_THROWS_AS(engine.workflow<FailingWorkflow>("v8-failed").result(1s), WorkflowFailed);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'lease_expired'") == 1);
  // Every journal row and task belongs to its run, and a new run of an ended id keeps the old history.
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events j WHERE NOT EXISTS "
                 "(SELECT 1 FROM {s}.workflows w WHERE w.run_id = j.run_id)") == 0);
  auto again = engine.start_workflow<ChainWorkflow>("v8-done", 100, {.id_reuse = IdReusePolicy::allow_if_ended});
  CHECK(again.result(30s) == 105);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'v8-done' AND kind = 'activity_completed'") ==
        10);
  CHECK(db.count("SELECT count(*) FROM pg_tables WHERE schemaname = '" + db.schema() + "' AND tablename = 'runs'") ==
        0);
}

TEST_CASE(
    "a schema at version 9 with a run in flight upgrades: its completed tasks go, and its events say what they did",
    "[pg][migrations]") {
  TestDb db;
  build_schema_at(db, 9);
  // As version 9 wrote them: step 0 completed at its second attempt (its task row holds the input,
  // options and start; its scheduled event is empty), step 1 scheduled and pending.
  const RunId run{"018f0000-0000-7000-8000-000000000009"};
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable)
VALUES ('v9-chain', '018f0000-0000-7000-8000-000000000009', 'chain', 'running', '10', 4, false);
INSERT INTO {s}.journal (run_id, workflow_id, seq, kind, step, name, data) VALUES
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 0, 'workflow_started', NULL, NULL, '{{"input": 10}}'),
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 1, 'activity_scheduled', 0, 'add', '{{}}'),
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 2, 'activity_completed', 0, 'add', '{{"result": 11, "attempts": 2}}'),
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 3, 'activity_scheduled', 1, 'add', '{{}}');
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, attempt, available_at,
                        attempt_started_at, first_started_at, result) VALUES
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 0, 'add', '{{"a": 10, "b": 1}}',
   '{{"timeout_ms": 30000, "max_retry_horizon_ms": 86400000, "max_attempts": 3}}', 'completed', 2, now(),
   now() - interval '1 minute', now() - interval '2 minutes', '11'),
  ('018f0000-0000-7000-8000-000000000009', 'v9-chain', 1, 'add', '{{"a": 11, "b": 1}}', '{{"timeout_ms": 30000, "max_retry_horizon_ms": 86400000}}',
   'pending', 0, now(), NULL, NULL, NULL);
INSERT INTO {s}.attempts (task_id, attempt, started_at, ended_at, outcome, error_type, error_message, retry_at)
SELECT task_id, 1, now() - interval '2 minutes', now() - interval '90 seconds', 'failed', 'std::runtime_error',
       'flaky', now() - interval '1 minute'
FROM {s}.tasks WHERE step = 0)");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow_run(run).result_json(30s) == 15);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks") == 0);
  // The history is whole: step 0's input and options moved to its event, its failed attempt is
  // found by run, its successful one by its completed event.
  const History h = engine.runs().history(run);
  REQUIRE(h.events.size() == 12);
  CHECK(h.events[1].data["input"] == Json{{"a", 10}, {"b", 1}});
  CHECK(h.events[1].data["options"]["max_attempts"] == 3);
  CHECK(h.events[3].data["input"] == Json{{"a", 11}, {"b", 1}});
  REQUIRE(h.attempts.size() == 6);
  CHECK(h.attempts[0].step == 0);
  CHECK(h.attempts[0].outcome == "failed");
  CHECK(h.attempts[0].error_message == "flaky");
  CHECK(h.attempts[1].outcome == "completed");
  REQUIRE(h.attempts[1].started_at.has_value());
  CHECK(*h.attempts[1].started_at < std::chrono::system_clock::now() - 50s);
  const RunInfo info = engine.runs().get(run);
  CHECK(info.activities == 5);
  CHECK(info.attempts == 6);
  CHECK(info.failed_attempts == 1);
}

TEST_CASE(
    "a schema at version 10 with runs in flight upgrades: one-event journal rows replay beside new ones, and a key "
    "lock's holder is still found",
    "[pg][migrations]") {
  TestDb db;
  build_schema_at(db, 10);
  // As version 10 wrote them, one event per journal row: run 'v10-chain' completed step 0 (its
  // task row gone) and waits for step 1, pending. Run 'v10-holder' runs step 1 under an
  // idempotency key, leased for an hour by an engine still alive, and holds the key's lock; run
  // 'v10-waiter' has a pending task for the same activity and key.
  const RunId chain{"018f0000-0000-7000-8000-00000000000a"};
  const std::string holder = "018f0000-0000-7000-8000-00000000000b";
  const std::string waiter = "018f0000-0000-7000-8000-00000000000c";
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable) VALUES
  ('v10-chain', '018f0000-0000-7000-8000-00000000000a', 'chain', 'running', '10', 4, false),
  ('v10-holder', '018f0000-0000-7000-8000-00000000000b', 'chain', 'running', '10', 4, false),
  ('v10-waiter', '018f0000-0000-7000-8000-00000000000c', 'chain', 'running', '11', 2, false);
INSERT INTO {s}.journal (run_id, seq, kind, step, name, data)
SELECT r.run_id::uuid, e.seq, e.kind, e.step, e.name, e.data FROM
  (VALUES ('018f0000-0000-7000-8000-00000000000a'), ('018f0000-0000-7000-8000-00000000000b')) AS r(run_id),
  (VALUES (0, 'workflow_started', NULL::int, NULL::text, '{{"input": 10}}'::jsonb),
          (1, 'activity_scheduled', 0, 'add', '{{"input": {{"a": 10, "b": 1}}}}'),
          (2, 'activity_completed', 0, 'add', '{{"result": 11, "attempts": 1, "started_us": 1796000000000000}}'),
          (3, 'activity_scheduled', 1, 'add', '{{"input": {{"a": 11, "b": 1}}}}')) AS e(seq, kind, step, name, data);
INSERT INTO {s}.journal (run_id, seq, kind, step, name, data) VALUES
  ('018f0000-0000-7000-8000-00000000000c', 0, 'workflow_started', NULL, NULL, '{{"input": 11}}'),
  ('018f0000-0000-7000-8000-00000000000c', 1, 'activity_scheduled', 0, 'add', '{{"input": {{"a": 11, "b": 1}}}}');
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, attempt, available_at) VALUES
  ('018f0000-0000-7000-8000-00000000000a', 'v10-chain', 1, 'add', '{{"a": 11, "b": 1}}', '{{}}', 'pending', 0, now());
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, attempt, available_at,
                        lease_token, lease_owner, lease_until, attempt_started_at, first_started_at) VALUES
  ('018f0000-0000-7000-8000-00000000000b', 'v10-holder', 1, 'add', '{{"a": 11, "b": 1}}',
   '{{"idempotency_key_hex": "6b6579"}}', 'key', 'running', 1, now(), 77, 'alive@elsewhere:1', now() + interval '1 hour',
   now(), now()),
  ('018f0000-0000-7000-8000-00000000000c', 'v10-waiter', 0, 'add', '{{"a": 11, "b": 1}}',
   '{{"idempotency_key_hex": "6b6579"}}', 'key', 'pending', 0, now(), NULL, NULL, NULL, NULL, NULL);
INSERT INTO {s}.idempotency_locks (activity, key, task_id, lease_token)
SELECT 'add', 'key', task_id, 77 FROM {s}.tasks WHERE run_id = '018f0000-0000-7000-8000-00000000000b')");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  // The chain's old rows and the rows this build writes (one per commit) make one journal.
  CHECK(engine.workflow_run(chain).result_json(30s) == 15);
  const History h = engine.runs().history(chain);
  REQUIRE(h.events.size() == 12);
  for (std::size_t i = 0; i < h.events.size(); ++i) CHECK(h.events[i].seq == static_cast<int>(i));
  CHECK(h.events[2].kind == "activity_completed");
  CHECK(h.events[11].kind == "workflow_completed");
  CHECK(engine.runs().get(chain).activities == 5);
  CHECK(db.count("SELECT count(*) FROM {s}.journal WHERE run_id = '" + chain.str() + "'") < 12);  // events share rows
  // The waiter finds the lock held by the live holder (by its run and step now) and waits for its
  // lease, never running the body beside it.
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {s}.tasks WHERE run_id = '" + waiter +
                    "' AND status = 'pending' AND available_at > now() + interval '30 minutes'") == 1;
  }));
  CHECK(db.count("SELECT count(*) FROM {s}.idempotency_locks WHERE run_id = '" + holder + "' AND step = 1") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + waiter +
                 "' AND kind = 'activity_completed'") == 0);
}

TEST_CASE("a schema at version 11 with runs in flight upgrades to inboxes, and its runs take messages",
          "[pg][migrations][messages]") {
  TestDb db;
  build_schema_at(db, 11);
  // As version 11 wrote it: an inbox workflow started and never replayed (no engine ran yet).
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable) VALUES
  ('v11-inbox', '018f0000-0000-7000-8000-0000000000b1', 'inbox', 'running', '{{"count": 2, "between_ms": 0}}', 1, true);
INSERT INTO {s}.journal (run_id, seq, kind, data) VALUES
  ('018f0000-0000-7000-8000-0000000000b1', 0, 'workflow_started', '{{"input": {{"count": 2, "between_ms": 0}}}}'))");
  Engine client(db.options());  // migrates the schema at its first statement, then sends
  register_all(client);
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  client.send("v11-inbox", "item", std::string("one"));
  client.send("v11-inbox", "item", std::string("two"));
  CHECK(engine.workflow_run(RunId{"018f0000-0000-7000-8000-0000000000b1"}).result_json(30s) == Json{"one", "two"});
}

TEST_CASE("a schema at version 13 with runs in flight upgrades to continue-as-new, and its runs continue",
          "[pg][migrations][continue]") {
  TestDb db;
  build_schema_at(db, 13);
  // As version 13 wrote it: a loop started and never replayed, a message already in its inbox.
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, messages_sent) VALUES
  ('v13-loop', '018f0000-0000-7000-8000-0000000000c1', 'loop', 'running',
   '{{"done": 0, "total": 6, "every": 2, "ticks": 2, "sum": 0, "got": []}}', 1, true, 1);
INSERT INTO {s}.journal (run_id, seq, kind, data) VALUES
  ('018f0000-0000-7000-8000-0000000000c1', 0, 'workflow_started',
   '{{"input": {{"done": 0, "total": 6, "every": 2, "ticks": 2, "sum": 0, "got": []}}}}');
INSERT INTO {s}.messages (run_id, seq, topic, message_id, payload) VALUES
  ('018f0000-0000-7000-8000-0000000000c1', 1, 'tick', '018f0000-0000-7000-8000-0000000000c2', '"before"'))");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  engine.send("v13-loop", "tick", std::string("after"));
  const Json last = engine.workflow_run(RunId{"018f0000-0000-7000-8000-0000000000c1"}).result_json(30s);
  CHECK(last.at("sum") == 15);
  CHECK(last.at("got") == Json{"before", "after"});
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'v13-loop' AND status = 'continued'") == 2);
}

TEST_CASE(
    "a schema at version 14 with runs in flight upgrades to versioning, and its runs complete under an app version",
    "[pg][migrations][versioning]") {
  TestDb db;
  build_schema_at(db, 14);
  insert_chain_after_first_step(db, "v14-chain", "018f0000-0000-7000-8000-0000000000d1");
  EngineOptions options = db.options();
  options.app_version = "after-upgrade";
  Engine engine(options);
  register_all(engine);
  engine.start();
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  CHECK(engine.workflow_run(RunId{"018f0000-0000-7000-8000-0000000000d1"}).result_json(30s) == 6);
  const RunInfo run = engine.runs().get(RunId{"018f0000-0000-7000-8000-0000000000d1"});
  CHECK(run.app_version == "after-upgrade");
  CHECK_FALSE(run.blocked);
  CHECK(engine.metrics().workflows_blocked == 0);
}

TEST_CASE("a schema at version 15 with runs in flight upgrades to the list of engines, and its runs complete",
          "[pg][migrations][stats]") {
  TestDb db;
  build_schema_at(db, 15);
  insert_chain_after_first_step(db, "v15-chain", "018f0000-0000-7000-8000-0000000000e1");
  CHECK(schema_version(db.url(), db.schema()).current == 15);
  CHECK(migrate_schema(db.url(), db.schema()) == pg::latest_schema_version());
  EngineOptions options = db.options();
  options.instance = "after-16";
  Engine engine(options);
  register_all(engine);
  engine.start();
  CHECK(engine.workflow_run(RunId{"018f0000-0000-7000-8000-0000000000e1"}).result_json(30s) == 6);
  CHECK(wait_until([&] {
    const Stats s = engine.runs().stats();
    return s.instances.size() == 1 && s.instances[0].instance == "after-16" && s.instances[0].alive;
  }));
}

TEST_CASE("a schema at version 16 with runs in flight upgrades to transactional activities, and its runs complete",
          "[pg][migrations][transactions]") {
  TestDb db;
  build_schema_at(db, 16);
  insert_chain_after_first_step(db, "v16-chain", "018f0000-0000-7000-8000-0000000000f1");
  Engine engine(db.options());
  register_all(engine);
  const ActivityRef<int, long long> count_runs{"count_runs"};
  const WorkflowRef<int, long long> counting{"counting"};
  engine.add_activity(count_runs, [](TransactionContext& ctx, const int&) {
    return ctx.transaction().exec1("SELECT count(*) FROM pg_stat_activity")[0].as<long long>();
  });
  engine.add_workflow(counting, [count_runs](WorkflowContext& ctx, const int& n) { return ctx.call(count_runs, n); });
  engine.start();
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  CHECK(engine.workflow_run(RunId{"018f0000-0000-7000-8000-0000000000f1"}).result_json(30s) == 6);
  CHECK(engine.start_workflow(counting, "v17-transactional", 0).result(30s) > 0);
  CHECK(db.count("SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + db.schema() +
                 "' AND column_name IN ('created_at', 'updated_at') AND table_name IN ('journal', 'tasks', "
                 "'workflows') AND column_default = 'statement_timestamp()'") == 5);
}

TEST_CASE("a schema at version 20 with turns kept upgrades to weighted turns, and each key keeps its place",
          "[pg][migrations][queues]") {
  TestDb db;
  build_schema_at(db, 20);
  // Turns kept in whole rounds: the queue at turn 4, key a served ahead of it, to turn 6.
  db.query("INSERT INTO {s}.queues (name, concurrency, run_turn, attempt_turn) VALUES ('tenants', 1, 4, 2)");
  db.query("INSERT INTO {s}.queue_keys (queue, attempt, concurrency_key, served) VALUES ('tenants', false, 'a', 6)");
  insert_chain_after_first_step(db, "v20-chain", "018f0000-0000-7000-8000-000000000201");  // a run in flight
  CHECK(migrate_schema(db.url(), db.schema()) == pg::latest_schema_version());
  CHECK(db.count("SELECT run_turn FROM {s}.queues WHERE name = 'tenants'") == 4'000'000);
  CHECK(db.count("SELECT attempt_turn FROM {s}.queues WHERE name = 'tenants'") == 2'000'000);
  CHECK(db.count("SELECT served FROM {s}.queue_keys WHERE concurrency_key = 'a'") == 6'000'000);
  CHECK(db.count("SELECT count(*) FROM {s}.queues WHERE key_weights = jsonb_build_object()") == 1);
  Engine client(db.options());
  register_all(client);
  for (const std::string key : {"a", "b"}) {
    for (int i = 0; i < 2; ++i) {
      StartOptions options;
      options.queue = "tenants";
      options.concurrency_key = key;
      client.start_workflow<SlowWorkflow>(fmt::format("{}-{}", key, i), 5, options);
    }
  }
  auto engine = serving_tenants(db);
  // b starts at the queue's turn, a two turns on: b's two runs go first. Turns left unscaled
  // would put a's first run second (turn 1,000,006 against b's 1,000,004 and 2,000,004).
  CHECK(tenants_in_order_of_ending(db) == std::vector<std::string>{"b-0", "b-1", "a-0", "a-1"});
  CHECK(engine->workflow_run(RunId{"018f0000-0000-7000-8000-000000000201"}).result_json(30s) == 6);
}

TEST_CASE("a schema at version 21 with runs queued upgrades to lines, and the runs are admitted in turn",
          "[pg][migrations][queues]") {
  TestDb db;
  build_schema_at(db, 21);
  // Two keys' runs queued before lines existed; key a served ahead of the queue's turn.
  db.query("INSERT INTO {s}.queues (name, concurrency, run_turn) VALUES ('tenants', 1, 4000000)");
  db.query(
      "INSERT INTO {s}.queue_keys (queue, attempt, concurrency_key, served) VALUES ('tenants', false, 'a', 6000000)");
  int n = 300;
  for (const std::string key : {"a", "b"}) {
    for (int i = 0; i < 2; ++i) queue_tenant_run(db, fmt::format("{}-{}", key, i), key, n++);
  }
  CHECK(migrate_schema(db.url(), db.schema()) == pg::latest_schema_version());
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines WHERE queue = 'tenants'") == 2);
  CHECK(db.count("SELECT served FROM {s}.queue_lines WHERE concurrency_key = 'a'") == 6'000'000);
  auto engine = serving_tenants(db);
  // b at the queue's turn, a ahead of it
  CHECK(tenants_in_order_of_ending(db) == std::vector<std::string>{"b-0", "b-1", "a-0", "a-1"});
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.queue_lines") == 0; }));
}

TEST_CASE("a schema at version 22 with runs queued upgrades to priority aging, and an old run rises",
          "[pg][migrations][queues]") {
  TestDb db;
  build_schema_at(db, 22);
  // Key a's runs queued an hour ago at priority 0, key b's now at priority 2; their lines joined by
  // version 22's trigger.
  db.query("INSERT INTO {s}.queues (name, concurrency) VALUES ('tenants', 1)");
  int n = 400;
  for (const std::string key : {"a", "b"}) {
    for (int i = 0; i < 2; ++i) {
      queue_tenant_run(db, fmt::format("{}-{}", key, i), key, n++, key == "a" ? 0 : 2, key == "a" ? 60 - i : 0);
    }
  }
  CHECK(migrate_schema(db.url(), db.schema()) == pg::latest_schema_version());
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines WHERE level = priority") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines WHERE concurrency_key = 'a' AND head_at < now() - interval "
                 "'59 minutes'") == 1);
  QueueSpec spec{"tenants", 1, std::nullopt};
  spec.priority_aging = std::chrono::minutes{1};
  Engine(db.options()).queues().define(spec);
  auto engine = serving_tenants(db);
  // a risen to 2, the highest waiting: the keys take turns (without aging b would go first).
  CHECK(tenants_in_order_of_ending(db) == std::vector<std::string>{"a-0", "b-0", "a-1", "b-1"});
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.queue_lines") == 0; }));
}

TEST_CASE("a schema at version 23 with runs queued upgrades to locks of its own, and the runs are admitted in turn",
          "[pg][migrations][queues]") {
  TestDb db;
  build_schema_at(db, 23);
  db.query("INSERT INTO {s}.queues (name, concurrency) VALUES ('tenants', 1)");
  int n = 500;
  for (int i = 0; i < 2; ++i) {
    for (const std::string key : {"a", "b"}) queue_tenant_run(db, fmt::format("{}-{}", key, i), key, n++, 0, 10 - i);
  }
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines") == 2);  // joined by version 23's trigger
  CHECK(migrate_schema(db.url(), db.schema()) == pg::latest_schema_version());
  CHECK(db.count("SELECT count(*) FROM {s}.locks WHERE name = 'retention'") == 1);
  auto engine = serving_tenants(db);
  CHECK(tenants_in_order_of_ending(db) == std::vector<std::string>{"a-0", "b-0", "a-1", "b-1"});
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.queue_lines") == 0; }));
}
