#include "fault/workload.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "base/registry.hpp"
#include "replay/replay.hpp"
#include "support/test_db.hpp"
#include "support/test_sql.hpp"

namespace durable::fault {

namespace {

std::string quoted(const std::string& schema) { return "\"" + schema + "\""; }

// One connection per activity thread, reopened after it breaks (a restart, a killed backend).
pqxx::connection& activity_connection(const std::string& url) {
  thread_local std::unique_ptr<pqxx::connection> conn;
  if (!conn || !conn->is_open()) conn = std::make_unique<pqxx::connection>(url);
  return *conn;
}

}  // namespace

ActivityOptions FaultStep::options() {
  // Many attempts: a restarting database fails attempts that the run must survive.
  return {.retry = RetryPolicy{.max_attempts = 50,
                               .backoff = Backoff::exponential,
                               .base = std::chrono::milliseconds{50},
                               .max_backoff = std::chrono::seconds{1}},
          .timeout = std::chrono::seconds{3}};
}

namespace {
// The execution log is committed on its own, before the effect: it records every body that ran.
void log_execution(pqxx::connection& conn, const std::string& schema, const StepInput& in, int attempt) {
  pqxx::work tx(conn);
  tx.exec_params0(
      fmt::format("INSERT INTO {}.fault_log (workflow_id, step, attempt, pid) VALUES ($1, $2, $3, $4)", quoted(schema)),
      in.workflow_id, in.step, attempt, static_cast<int>(getpid()));
  tx.commit();
}
}  // namespace

Json FaultStep::operator()(ActivityContext& ctx, const StepInput& in) const {
  try {
    pqxx::connection& conn = activity_connection(url);
    log_execution(conn, schema, in, ctx.attempt());
    if (in.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds{in.sleep_ms});
    pqxx::work tx(conn);
    tx.exec_params0(
        fmt::format("INSERT INTO {}.fault_effects (workflow_id, step, attempt, pid) VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT (workflow_id, step) DO NOTHING",
                    quoted(schema)),
        in.workflow_id, in.step, ctx.attempt(), static_cast<int>(getpid()));
    tx.commit();
  } catch (const pqxx::broken_connection& e) {
    throw std::runtime_error(std::string("effect connection lost: ") + e.what());  // retried
  }
  return {{"pid", static_cast<int>(getpid())}, {"attempt", ctx.attempt()}};
}

Json TxFaultStep::operator()(TransactionContext& ctx, const StepInput& in) const {
  try {
    log_execution(activity_connection(url), schema, in, ctx.attempt());
  } catch (const pqxx::broken_connection& e) {
    throw std::runtime_error(std::string("log connection lost: ") + e.what());  // retried
  }
  if (in.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds{in.sleep_ms});
  ctx.transaction().exec_params0(
      fmt::format("INSERT INTO {}.fault_tx_effects (workflow_id, step, attempt, pid) VALUES ($1, $2, $3, $4)",
                  quoted(schema)),
      in.workflow_id, in.step, ctx.attempt(), static_cast<int>(getpid()));
  return {{"pid", static_cast<int>(getpid())}, {"attempt", ctx.attempt()}};
}

int TxFaultFlow::operator()(WorkflowContext& ctx, const FlowInput& in) {
  for (int step = 0; step < in.steps; ++step)
    ctx.call<TxFaultStep>(StepInput{ctx.workflow_id().str(), step, in.sleep_ms});
  return in.steps;
}

ActivityOptions CrashStep::options() {
  return {.retry = RetryPolicy{.max_attempts = 3}, .timeout = std::chrono::seconds{1}};
}

int CrashStep::operator()(ActivityContext& ctx, const StepInput& in) const {
  log_execution(activity_connection(url), schema, in, ctx.attempt());
  std::abort();
}

int CrashFlow::operator()(WorkflowContext& ctx, const int&) {
  return ctx.call<CrashStep>(StepInput{ctx.workflow_id().str(), 0, 0});
}

int FaultFlow::operator()(WorkflowContext& ctx, const FlowInput& in) {
  for (int step = 0; step < in.steps; ++step)
    ctx.call<FaultStep>(StepInput{ctx.workflow_id().str(), step, in.sleep_ms});
  return in.steps;
}

EngineOptions workload_options(const std::string& url, const std::string& schema, const std::string& instance) {
  EngineOptions o;
  o.database_url = url;
  o.schema = schema;
  o.instance = instance;
  o.poll_interval = std::chrono::milliseconds{200};
  o.workflow_lease = std::chrono::seconds{3};
  o.lease_margin = std::chrono::seconds{1};
  o.shutdown_grace = std::chrono::seconds{2};
  // With DURABLE_TEST_POOLER=1, through the test PgBouncer, which fronts the test database (a
  // test that stops a server of its own connects to it directly).
  if (!durable::test::test_pooler_url().empty() && url == testing::database_url())
    durable::test::through_test_pooler(o);
  return o;
}

void register_workload(Engine& engine, const std::string& url, const std::string& schema) {
  engine.add(FaultStep{url, schema}).add<FaultFlow>().add(CrashStep{url, schema}).add<CrashFlow>();
  engine.add(TxFaultStep{url, schema}).add<TxFaultFlow>();
}

void create_workload_tables(const std::string& url, const std::string& schema) {
  {
    Engine engine(workload_options(url, schema, "setup"));
    engine.schedules().list();  // migrates the schema
  }
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  const std::string s = quoted(schema);
  tx.exec0(fmt::format(R"(
CREATE TABLE IF NOT EXISTS {0}.fault_log (
  workflow_id text NOT NULL, step integer NOT NULL, attempt integer NOT NULL, pid integer NOT NULL,
  logged_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS {0}.fault_effects (
  workflow_id text NOT NULL, step integer NOT NULL, attempt integer NOT NULL, pid integer NOT NULL,
  PRIMARY KEY (workflow_id, step));
CREATE TABLE IF NOT EXISTS {0}.fault_tx_effects (
  workflow_id text NOT NULL, step integer NOT NULL, attempt integer NOT NULL, pid integer NOT NULL);)",
                       s));
  tx.commit();
}

int start_workflows(Engine& engine, const std::string& prefix, int count, const FlowInput& input, int first,
                    bool transactional) {
  const std::string flow = transactional ? TxFaultFlow::name : FaultFlow::name;
  std::atomic<int> accepted{0}, next{0};
  std::vector<std::thread> starters;  // a few at once: a start is one commit, this is the driver's speed
  for (int t = 0; t < 4; ++t) {
    starters.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        if (engine.start_or_find(flow, prefix + std::to_string(first + i), Json(input)).started) ++accepted;
      }
    });
  }
  for (auto& t : starters) t.join();
  return accepted;
}

bool wait_all_ended(const std::string& url, const std::string& schema, const std::string& prefix,
                    std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  pqxx::connection conn(url);
  for (;;) {
    pqxx::nontransaction tx(conn);
    auto running = tx.exec_params1(fmt::format("SELECT count(*) FROM {}.workflows WHERE workflow_id LIKE $1 || '%' "
                                               "AND status = 'running'",
                                               quoted(schema)),
                                   prefix)[0]
                       .as<long>();
    if (running == 0) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
}

namespace {

// Replays one completed journal with the workflow code: it must reach the same end with
// nothing new to do and no non-determinism.
bool replays_cleanly(const detail::Registry& registry, const std::string& workflow_id, const std::string& name,
                     const pqxx::result& events) {
  try {
    detail::JournalCache journal;
    for (const auto& r : events) {
      pg::JournalEvent e;
      e.seq = r[0].as<int>();
      e.kind = journal::event_kind_from_text(r[1].as<std::string>());
      e.step = r[2].is_null() ? -1 : r[2].as<int>();
      e.name = r[3].is_null() ? "" : r[3].as<std::string>();
      e.data = Json::parse(r[4].as<std::string>());
      journal.apply(e);  // throws on a gap or an event out of order
    }
    detail::Replay replay(workflow_id, name, journal, 0, registry);
    WorkflowContext ctx = replay.context();
    registry.workflow(name).run(ctx, journal.input);
    return !replay.suspended() && !replay.nondeterminism() && replay.events.empty() && replay.tasks.empty();
  } catch (...) {  // a non-determinism error, a Suspend, a journal that does not apply
    return false;
  }
}

}  // namespace

Check check(const std::string& url, const std::string& schema, const std::string& prefix) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  const std::string s = quoted(schema);
  auto one = [&](const std::string& sql) {
    return tx.exec_params1(test::test_sql(sql, s), prefix + "%")[0].as<std::int64_t>();
  };
  Check c;
  c.workflows = one("SELECT count(*) FROM {s}.workflows WHERE workflow_id LIKE $1");
  c.not_completed = one("SELECT count(*) FROM {s}.workflows WHERE workflow_id LIKE $1 AND status <> 'completed'");
  c.steps_completed =
      one("SELECT count(*) FROM {journal} jw WHERE workflow_id LIKE $1 AND kind = 'activity_completed'");
  c.duplicate_commits =
      one("SELECT count(*) FROM (SELECT 1 FROM {journal} jw WHERE workflow_id LIKE $1 AND kind = 'activity_completed' "
          "GROUP BY workflow_id, step HAVING count(*) > 1) d");
  // The effects of both kinds of step; only the transactional ones' table lets a duplicate in.
  const std::string effects = fmt::format(
      "(SELECT workflow_id, step FROM {0}.fault_effects UNION ALL SELECT workflow_id, step FROM {0}.fault_tx_effects)",
      s);
  c.missing_effects = one(
      "SELECT count(*) FROM {journal} j WHERE j.workflow_id LIKE $1 AND j.kind = 'activity_completed' AND NOT EXISTS "
      "(SELECT 1 FROM " +
      effects + " e WHERE e.workflow_id = j.workflow_id AND e.step = j.step)");
  c.stray_effects = one("SELECT count(*) FROM " + effects +
                        " e WHERE e.workflow_id LIKE $1 AND NOT EXISTS (SELECT 1 FROM "
                        "{journal} j "
                        "WHERE j.workflow_id = e.workflow_id AND j.step = e.step AND j.kind = 'activity_completed')");
  c.duplicate_effects = one("SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM " + effects +
                            " e WHERE e.workflow_id LIKE $1 GROUP BY workflow_id, step) d");
  c.journal_gaps =
      one("SELECT count(*) FROM {s}.workflows w JOIN (SELECT run_id, count(*) AS n, min(seq) AS lo, max(seq) AS hi "
          "FROM {s}.journal_events GROUP BY run_id) j USING (run_id) "
          "WHERE w.workflow_id LIKE $1 AND (j.n <> w.next_seq OR j.lo <> 0 OR j.hi <> w.next_seq - 1)");
  c.leased_tasks = one("SELECT count(*) FROM {s}.tasks WHERE workflow_id LIKE $1 AND status = 'running'");
  c.executions = one("SELECT count(*) FROM {s}.fault_log WHERE workflow_id LIKE $1");
  c.duplicate_executions =
      c.executions - one("SELECT count(DISTINCT (workflow_id, step)) FROM {s}.fault_log WHERE workflow_id LIKE $1");

  detail::Registry registry;
  registry.workflows.emplace(FaultFlow::name,
                             detail::make_workflow<FlowInput>(FaultFlow::name, [] { return FaultFlow{}; }));
  registry.activities.emplace(FaultStep::name,
                              detail::make_activity<StepInput>(FaultStep::name, FaultStep::options(), FaultStep{}));
  registry.workflows.emplace(TxFaultFlow::name,
                             detail::make_workflow<FlowInput>(TxFaultFlow::name, [] { return TxFaultFlow{}; }));
  registry.activities.emplace(TxFaultStep::name, detail::make_activity<StepInput, TransactionContext>(
                                                     TxFaultStep::name, TxFaultStep::options(), TxFaultStep{}));
  auto ids =
      tx.exec_params(fmt::format("SELECT workflow_id, run_id::text, name FROM {}.workflows WHERE workflow_id LIKE $1 "
                                 "AND status = 'completed'",
                                 s),
                     prefix + "%");
  for (const auto& id : ids) {
    auto events = tx.exec_params(fmt::format("SELECT seq, kind, step, name, data::text FROM {}.journal_events WHERE "
                                             "run_id = $1::uuid ORDER BY seq",
                                             s),
                                 id[1].as<std::string>());
    if (!replays_cleanly(registry, id[0].as<std::string>(), id[2].as<std::string>(), events)) ++c.replay_failures;
  }
  return c;
}

Json Check::to_json() const {
  return {{"workflows", workflows},
          {"not_completed", not_completed},
          {"steps_completed", steps_completed},
          {"duplicate_commits", duplicate_commits},
          {"missing_effects", missing_effects},
          {"stray_effects", stray_effects},
          {"duplicate_effects", duplicate_effects},
          {"journal_gaps", journal_gaps},
          {"replay_failures", replay_failures},
          {"leased_tasks", leased_tasks},
          {"executions", executions},
          {"duplicate_executions", duplicate_executions}};
}

void report(const std::string& fault, const Json& figures) {
  Json line = figures;
  line["fault"] = fault;
  std::cout << "FAULT " << line.dump() << "\n";
  std::cout << fmt::format("  {:<28} {}\n", "fault", fault);
  for (const auto& [key, value] : figures.items()) std::cout << fmt::format("  {:<28} {}\n", key, value.dump());
  std::cout.flush();
  if (const char* path = std::getenv("DURABLE_FAULT_REPORT"); path && *path) {
    std::ofstream(path, std::ios::app) << line.dump() << "\n";
  }
}

bool full_run() {
  const char* full = std::getenv("DURABLE_FAULT_FULL");
  return full && std::string(full) == "1";
}

}  // namespace durable::fault
