#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "base/failpoint.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/workers.hpp"

using namespace durable;
using namespace durable::test;

namespace {
using Items = std::vector<std::string>;

// The run's inbox: one row per message, each received at most once.
long long messages(const TestDb& db, const std::string& workflow_id, const std::string& where = "true") {
  return db.count("SELECT count(*) FROM {s}.messages m JOIN {s}.workflows w USING (run_id) WHERE w.workflow_id = '" +
                  workflow_id + "' AND " + where);
}

#ifdef DURABLE_TEST_WORKER
// The run's result once a first worker died at its fourth inbox read (a message taken, not
// committed), a second at its third, and a third finished it.
template <typename Handle>
auto after_two_kills(const TestDb& db, Handle& run) {
  CHECK(exit_within(worker_with(db, "replay.after_inbox_read=kill@4"), 60s) == 128 + SIGKILL);
  past_its_leases(db);
  CHECK(exit_within(worker_with(db, "replay.after_inbox_read=kill@3"), 60s) == 128 + SIGKILL);
  past_its_leases(db);
  pid_t worker = spawn_worker(db.url(), {db.schema(), "serve"});
  auto result = run.result(120s);
  kill(worker, SIGTERM);
  wait_for(worker);
  return result;
}

std::vector<std::string> numbered_items(int count) {  // m0, m1, ...
  std::vector<std::string> items;
  for (int i = 0; i < count; ++i) items.push_back("m" + std::to_string(i));
  return items;
}
#endif

// Starts run `id` of W, which waits an hour for a message of `topic`, once its journal holds
// `waiting` stops every engine, moves the clock two hours on, sends the message late, and returns
// a new engine, started, to finish the run.
template <typename W, typename In>
std::unique_ptr<Engine> after_a_late_message(const TestDb& db, const std::string& id, const In& input,
                                             const std::string& topic, const std::string& waiting) {
  auto engine = std::make_unique<Engine>(db.options());
  register_all(*engine);
  engine->start();
  engine->start_workflow<W>(id, input);
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = '" + id + "' AND kind = '" + waiting +
                    "'") == 1;
  }));
  engine.reset();  // every engine down
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{2});
  Engine client(db.options());
  register_all(client);
  client.send(id, topic, std::string("late"));
  engine = std::make_unique<Engine>(db.options());
  register_all(*engine);
  engine->start();
  return engine;
}

}  // namespace

TEST_CASE("messages sent while every engine is down are received, in send order, when one starts", "[pg][messages]") {
  TestDb db;
  Engine client(db.options());  // never started: it only starts the run and sends
  register_all(client);
  auto run = client.start_workflow<InboxWorkflow>("inbox-down", InboxInput{3, 0});
  const std::string first = client.send("inbox-down", "item", std::string("a"));
  client.send("inbox-down", "item", std::string("b"));
  client.send("inbox-down", "item", std::string("c"));
  CHECK(first.size() == 36);
  CHECK(messages(db, "inbox-down", "received_step IS NULL") == 3);  // in the inbox at once

  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(run.result(30s) == Items{"a", "b", "c"});
  // Each received exactly once, at its own step, and journaled with its payload.
  CHECK(messages(db, "inbox-down", "received_step IS NOT NULL") == 3);
  CHECK(db.count("SELECT count(DISTINCT received_step) FROM {s}.messages") == 3);
  auto journaled = db.query(
      "SELECT data->>'payload', data->>'message_id' FROM {journal} jw WHERE workflow_id = 'inbox-down' AND kind = "
      "'message_received' ORDER BY seq");
  REQUIRE(journaled.size() == 3);
  CHECK(journaled[0][0].as<std::string>() == "a");
  CHECK(journaled[0][1].as<std::string>() == first);
}

TEST_CASE_METHOD(RunningEngine, "a message sent before the workflow waits for it is received when it does",
                 "[pg][messages]") {
  // The workflow is in a 500 ms activity when the messages come; between them it replays its
  // journaled receives, which must return what they returned the first time.
  auto run = engine.start_workflow<InboxWorkflow>("inbox-early", InboxInput{2, 500});
  engine.send("inbox-early", "item", std::string("first"));
  engine.send("inbox-early", "item", std::string("second"));
  CHECK(run.result(30s) == Items{"first", "second"});
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'inbox-early' AND kind = 'receive_started'") ==
        0);  // never waited: both were there when it reached them
}

TEST_CASE("a message sent after a replay read the inbox, before it committed, still wakes the run",
          "[pg][messages][wake]") {
  RunningEngine env([](EngineOptions& o) { o.poll_interval = std::chrono::seconds{30}; });
  FailpointsOff off;
  detail::configure_failpoints("replay.after_inbox_read=sleep:1500");
  auto run = env.engine.start_workflow<ApprovalWorkflow>("late-message", 600'000);
  // The replay has read an empty inbox and sleeps in the failpoint when the message comes.
  std::this_thread::sleep_for(500ms);
  env.engine.send("late-message", "approval", std::string("ana"));
  // Without the commit's check (the run's message count moved since the read) the run would
  // wait for a message that is already there: until the 10 minute deadline.
  CHECK(run.result(20s) == "approved by ana");
}

TEST_CASE_METHOD(RunningEngine, "a workflow waiting in receive wakes at once when a message comes",
                 "[pg][messages][wake]") {
  auto run = engine.start_workflow<ApprovalWorkflow>("waiting", 600'000);
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'waiting' AND kind = 'receive_started'") ==
           1;
  }));
  const auto sent = std::chrono::steady_clock::now();
  engine.send("waiting", "approval", std::string("bo"));
  CHECK(run.result(20s) == "approved by bo");
  CHECK(std::chrono::steady_clock::now() - sent < 5s);  // NOTIFY, not the 10 minute deadline
}

TEST_CASE_METHOD(RunningEngine, "receive returns nothing once its deadline passes by the database clock",
                 "[pg][messages][timer]") {
  auto run = engine.start_workflow<ApprovalWorkflow>("deadline", 3'600'000);  // an hour
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'deadline' AND kind = 'receive_started'") ==
           1;
  }));
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{2});
  CHECK(run.result(20s) == "timed out");
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'deadline' AND kind = 'receive_timed_out'") ==
        1);
  // A zero timeout does not wait at all.
  CHECK(engine.start_workflow<ApprovalWorkflow>("no-wait", 0).result(20s) == "timed out");
}

TEST_CASE("a message sent after the deadline, while no engine ran, loses to the deadline and stays unreceived",
          "[pg][messages][timer]") {
  TestDb db;
  auto next = after_a_late_message<ApprovalWorkflow>(db, "too-late", 3'600'000, "approval", "receive_started");
  CHECK(next->workflow<ApprovalWorkflow>("too-late").result(20s) == "timed out");
  CHECK(messages(db, "too-late", "received_step IS NULL") == 1);
}

TEST_CASE_METHOD(RunningEngine, "many messages from two senders are each received once, in each sender's order",
                 "[pg][messages]") {
  constexpr int per_sender = 40;
  auto run = engine.start_workflow<InboxWorkflow>("inbox-many", InboxInput{2 * per_sender, 0});
  auto sender = [&](const std::string& who) {
    for (int i = 0; i < per_sender; ++i) engine.send("inbox-many", "item", who + std::to_string(i));
  };
  std::thread a(sender, "a"), b(sender, "b");
  a.join();
  b.join();
  const Items got = run.result(60s);
  REQUIRE(got.size() == 2 * per_sender);
  int next_a = 0, next_b = 0;
  for (const auto& item : got) {
    int& next = item[0] == 'a' ? next_a : next_b;
    CHECK(item.substr(1) == std::to_string(next));
    ++next;
  }
  CHECK(next_a == per_sender);
  CHECK(next_b == per_sender);
  // Received in the order sent: by the per-run sequence numbers.
  CHECK(db.count("SELECT count(*) FROM {s}.messages a, {s}.messages b WHERE a.seq < b.seq AND "
                 "a.received_step > b.received_step") == 0);
}

TEST_CASE_METHOD(RunningEngine, "a send with an idempotency key used before adds nothing and returns the first id",
                 "[pg][messages][idempotency]") {
  auto run = engine.start_workflow<InboxWorkflow>("inbox-key", InboxInput{2, 0});
  SendOptions keyed;
  keyed.idempotency_key = "order-7-approved";
  const std::string first = engine.send("inbox-key", "item", std::string("once"), keyed);
  CHECK(engine.send("inbox-key", "item", std::string("once"), keyed) == first);
  CHECK(engine.send("inbox-key", "item", std::string("other payload"), keyed) == first);
  CHECK(messages(db, "inbox-key") == 1);
  engine.send("inbox-key", "item", std::string("then"));
  CHECK(run.result(30s) == Items{"once", "then"});
}

TEST_CASE_METHOD(RunningEngine, "a send whose answer was lost after it committed is not sent again",
                 "[pg][messages][connection]") {
  FailpointsOff off;
  auto run = engine.start_workflow<InboxWorkflow>("inbox-lost", InboxInput{2, 0});
  detail::configure_failpoints("lost_answer.send_message=fail@1");  // the first try commits, its answer is lost
  const std::string id = engine.send("inbox-lost", "item", std::string("once"));
  detail::configure_failpoints("");
  CHECK(messages(db, "inbox-lost") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.messages WHERE message_id = '" + id + "'") == 1);
  engine.send("inbox-lost", "item", std::string("twice?"));
  CHECK(run.result(30s) == Items{"once", "twice?"});
}

TEST_CASE_METHOD(RunningEngine, "bad sends are typed errors that write nothing", "[pg][messages][bad_input]") {
  auto run = engine.start_workflow<InboxWorkflow>("inbox-bad", InboxInput{1, 0});
  const Json text = "x";
  CHECK_THROWS_AS(engine.send("no-such-workflow", "item", text), WorkflowNotFound);
  CHECK_THROWS_WITH(engine.send("inbox-bad", "", text), Catch::Contains("topic is empty"));
  CHECK_THROWS_AS(engine.send("inbox-bad", "", text), InvalidTopic);
  CHECK_THROWS_WITH(engine.send("inbox-bad", std::string(256, 't'), text),
                    Catch::Contains("256 bytes long: the limit is 255"));
  CHECK_THROWS_AS(engine.send("inbox-bad", std::string("a\0b", 3), text), InvalidTopic);
  CHECK_THROWS_AS(engine.send("inbox-bad", "\xff\xfe", text), InvalidTopic);
  CHECK_THROWS_AS(engine.send("inbox-bad", "item", std::nan("")), PayloadError);
  CHECK_THROWS_AS(engine.send("inbox-bad", "item", Json(std::string(max_payload_bytes + 1, 'p'))), PayloadError);
  SendOptions bad_key;
  bad_key.idempotency_key = std::string("k\0", 2);
  CHECK_THROWS_AS(engine.send("inbox-bad", "item", text, bad_key), InvalidIdempotencyKey);
  CHECK_THROWS_AS(engine.send("", "item", text), InvalidWorkflowId);
  CHECK(db.count("SELECT count(*) FROM {s}.messages") == 0);
  CHECK(db.count("SELECT max(messages_sent) FROM {s}.workflows") == 0);

  engine.send("inbox-bad", "item", std::string("good"));
  CHECK(run.result(30s) == Items{"good"});
  CHECK_THROWS_WITH(engine.send("inbox-bad", "item", text), Catch::Contains("has ended (status: completed)"));
  CHECK_THROWS_AS(engine.send("inbox-bad", "item", text), WorkflowEnded);
  CHECK(db.count("SELECT count(*) FROM {s}.messages") == 1);
}

TEST_CASE_METHOD(RunningEngine, "a workflow sends to another once, and learns of a missing or ended target",
                 "[pg][messages]") {
  auto inbox = engine.start_workflow<InboxWorkflow>("inbox-target", InboxInput{1, 0});
  auto relay = engine.start_workflow<RelayWorkflow>("relay-1", RelayInput{"inbox-target", "from a workflow"});
  const std::string id = relay.result(30s);
  CHECK(inbox.result(30s) == Items{"from a workflow"});
  CHECK(db.count("SELECT count(*) FROM {s}.messages WHERE message_id = '" + id + "'") == 1);
  CHECK(engine.start_workflow<RelayWorkflow>("relay-2", RelayInput{"nobody", "x"}).result(30s) == "not found");
  CHECK(engine.start_workflow<RelayWorkflow>("relay-3", RelayInput{"inbox-target", "x"}).result(30s) ==
        "ended: completed");
  CHECK(db.count("SELECT count(*) FROM {s}.messages") == 1);
}

#ifdef DURABLE_TEST_WORKER
TEST_CASE("an engine killed between reading the inbox and committing loses no message and receives none twice",
          "[pg][messages][crash]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  constexpr int count = 12;
  // An activity before each receive: each message is taken by a replay of its own.
  auto run = client.start_workflow<InboxWorkflow>("inbox-crash", InboxInput{count, 50});
  for (int i = 0; i < count; ++i) client.send("inbox-crash", "item", "m" + std::to_string(i));
  CHECK(after_two_kills(db, run) == numbered_items(count));
  CHECK(messages(db, "inbox-crash", "received_step IS NOT NULL") == count);
  CHECK(db.count("SELECT count(DISTINCT received_step) FROM {s}.messages") == count);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'inbox-crash' AND kind = "
                 "'message_received'") == count);
}

TEST_CASE("a workflow's send interrupted by a kill after the message went in is not sent twice",
          "[pg][messages][crash]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  auto inbox = client.start_workflow<InboxWorkflow>("inbox-relayed", InboxInput{1, 0});
  // The send activity's body has put the message in; the worker dies before committing its outcome.
  pid_t worker = worker_with(db, "task.before_commit=kill@1");
  auto relay = client.start_workflow<RelayWorkflow>("relay-crash", RelayInput{"inbox-relayed", "exactly once"});
  CHECK(exit_within(worker, 60s) == 128 + SIGKILL);
  CHECK(messages(db, "inbox-relayed") == 1);
  past_its_leases(db);
  worker = spawn_worker(db.url(), {db.schema(), "serve"});
  const std::string id = relay.result(120s);
  CHECK(inbox.result(60s) == Items{"exactly once"});
  kill(worker, SIGTERM);
  wait_for(worker);
  CHECK(messages(db, "inbox-relayed") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.messages WHERE message_id = '" + id + "'") == 1);
}
#endif

TEST_CASE_METHOD(RunningEngine, "wait_any takes a message that comes before the deadline, or the deadline",
                 "[pg][messages][wait_any]") {
  auto approved = engine.start_workflow<FirstOfWorkflow>("first-of-msg", FirstOfInput{});  // an hour to wait
  auto timed_out = engine.start_workflow<FirstOfWorkflow>("first-of-timer", FirstOfInput{});
  auto started = [&](const std::string& id) {
    return db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = '" + id + "' AND kind = 'timer_started'") ==
           1;
  };
  REQUIRE(wait_until([&] { return started("first-of-msg") && started("first-of-timer"); }));
  engine.send("first-of-msg", "item", std::string("yes"));
  CHECK(approved.result(20s) == Items{"yes"});
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{2});
  CHECK(timed_out.result(20s) == Items{"timed out"});
  // Each choice is journaled once, after the outcome it chose; the timer that lost never fired.
  auto chosen =
      db.query("SELECT workflow_id, data->>'index' FROM {journal} jw WHERE kind = 'wait_chosen' ORDER BY workflow_id");
  REQUIRE(chosen.size() == 2);
  CHECK(chosen[0][1].as<std::string>() == "0");
  CHECK(chosen[1][1].as<std::string>() == "1");
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'first-of-msg' AND kind = 'timer_fired'") == 0);
}

TEST_CASE("wait_any: a message sent after the deadline, while no engine ran, loses to it and stays unreceived",
          "[pg][messages][wait_any]") {
  TestDb db;
  auto next = after_a_late_message<FirstOfWorkflow>(db, "first-of-late", FirstOfInput{}, "item", "timer_started");
  CHECK(next->workflow<FirstOfWorkflow>("first-of-late").result(20s) == Items{"timed out"});
  CHECK(messages(db, "first-of-late", "received_step IS NULL") == 1);
}

TEST_CASE_METHOD(RunningEngine, "wait_any between an activity and a timer: the first to finish wins",
                 "[pg][messages][wait_any]") {
  CHECK(engine.start_workflow<RaceWorkflow>("race-activity", RaceInput{50, 3'600'000}).result(20s) == "activity 50");
  // The timer wins; the run ends with the activity still running, which is told and not awaited.
  CHECK(engine.start_workflow<RaceWorkflow>("race-timer", RaceInput{5'000, 100}).result(20s) == "timer");
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'race-timer' AND kind = "
                 "'activity_completed'") == 0);
}

#ifdef DURABLE_TEST_WORKER
TEST_CASE("an engine killed while choosing in wait_any loses no message and receives none twice",
          "[pg][messages][wait_any][crash]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  constexpr int count = 12;
  auto run = client.start_workflow<FirstOfWorkflow>("first-of-crash", FirstOfInput{count, 3'600'000, 50});
  for (int i = 0; i < count; ++i) client.send("first-of-crash", "item", "m" + std::to_string(i));
  CHECK(after_two_kills(db, run) == numbered_items(count));  // each message came before its hour-long timer
  CHECK(messages(db, "first-of-crash", "received_step IS NOT NULL") == count);
  CHECK(db.count("SELECT count(DISTINCT received_step) FROM {s}.messages") == count);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'first-of-crash' AND kind = 'wait_chosen'") ==
        count);
}

#endif

TEST_CASE("a published event is read from another engine, woken when it is set, and later sets replace it",
          "[pg][messages][events]") {
  RunningEngine env([](EngineOptions& o) { o.poll_interval = std::chrono::seconds{30}; });
  auto& db = env.db;
  Engine client(db.options());  // never started: it reads through its own LISTEN session
  register_all(client);
  auto run = client.start_workflow<ProgressWorkflow>("progress-1", 0);
  const auto asked = std::chrono::steady_clock::now();
  CHECK(run.get_event<int>("progress", 20s) == 1);
  CHECK(std::chrono::steady_clock::now() - asked < 5s);    // NOTIFY, not the 30 s poll
  CHECK(run.get_event<int>("never-set") == std::nullopt);  // a zero timeout does not wait
  client.send("progress-1", "go", std::string("went"));
  CHECK(run.result(20s) == "went");
  CHECK(run.get_event<int>("progress") == 2);
  // Once per set, not per replay: two journaled sets, one row holding the latest.
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'progress-1' AND kind = 'event_set'") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.events") == 1);
  // A run that ended without setting a key answers at once.
  const auto ended_at = std::chrono::steady_clock::now();
  CHECK(run.get_event<int>("never-set", 60s) == std::nullopt);
  CHECK(std::chrono::steady_clock::now() - ended_at < 5s);
  CHECK_THROWS_AS(run.get_event<int>(""), InvalidTopic);

  // A waiter on a key never set returns when the run ends, woken by the end (not the 30 s poll).
  auto second = client.start_workflow<ProgressWorkflow>("progress-2", 0);
  CHECK(second.get_event<int>("progress", 20s) == 1);
  std::thread go([&] {
    std::this_thread::sleep_for(300ms);
    client.send("progress-2", "go", std::string("x"));
  });
  const auto waited = std::chrono::steady_clock::now();
  CHECK(second.get_event<int>("never-set", 60s) == std::nullopt);
  CHECK(std::chrono::steady_clock::now() - waited < 10s);
  go.join();
  CHECK_THROWS_AS(run.get_event<std::string>("progress"), PayloadError);
}
