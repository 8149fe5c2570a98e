// The fault-injection suite: processes die, freeze and lose their connections, PostgreSQL
// restarts; afterwards the checker proves nothing was lost or committed twice, and each test
// reports its figures (a `FAULT {...}` JSON line and a table). Short by default (CI); set
// DURABLE_FAULT_FULL=1 for the full sizes (scripts/fault.sh).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "fault/harness.hpp"
#include "fault/workload.hpp"
#include "support/expect.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_sql.hpp"

using namespace std::chrono_literals;
using durable::Json;
using durable::fault::Check;
using durable::fault::FlowInput;
using durable::fault::full_run;
using durable::fault::ms_since;
using durable::fault::report;
using durable::fault::Workers;
using durable::fault::Workload;
using durable::test::spawn_program;
using durable::test::wait_for;
using durable::test::wait_until;
using Clock = std::chrono::steady_clock;

namespace {

// A kill of a worker: the steps it held then (as SQL "('run', step)" tuples), and when (by the
// database clock).
struct Kill {
  std::vector<std::string> tasks_held;
  std::string at;
};
Kill record_kill(const Workload& w, pid_t pid) {
  pqxx::connection conn(w.url);
  pqxx::nontransaction tx(conn);
  Kill k;
  for (const auto& r : tx.exec(fmt::format("SELECT format('(%L::uuid, %s)', run_id, step) FROM \"{}\".tasks "
                                           "WHERE status = 'running' AND lease_owner LIKE '%:{}'",
                                           w.schema, pid))) {
    k.tasks_held.push_back(r[0].as<std::string>());
  }
  k.at = tx.exec1("SELECT clock_timestamp()::text")[0].as<std::string>();
  return k;
}
// Recovery: from the kill until the last step the dead worker held was completed by another.
double recovery_ms(const Workload& w, const Kill& k) {
  if (k.tasks_held.empty()) return 0;
  std::string steps;
  for (const auto& step : k.tasks_held) steps += (steps.empty() ? "" : ",") + step;
  return static_cast<double>(w.count(
      fmt::format("SELECT coalesce((extract(epoch FROM max(created_at) - '{}'::timestamptz) * 1000)::bigint, 0) "
                  "FROM {{s}}.journal_events WHERE kind = 'activity_completed' AND (run_id, step) IN ({})",
                  k.at, steps)));
}

}  // namespace

TEST_CASE("fault 1: worker processes killed with SIGKILL and restarted lose nothing and commit nothing twice",
          "[fault][crash]") {
  const int runs = full_run() ? 2000 : 300;
  const int kills = full_run() ? 6 : 3;
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  const auto started = Clock::now();
  REQUIRE(durable::fault::start_workflows(*w.starter, "crash-", runs, FlowInput{5, 50}) == runs);
  for (int i = 0; i < 3; ++i) workers.spawn();  // they start on a full queue

  std::mt19937 random(std::random_device{}());
  std::vector<Kill> killed;
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(1500ms);
    const auto victim = std::uniform_int_distribution<std::size_t>(0, workers.size() - 1)(random);
    killed.push_back(record_kill(w, workers.pid(victim)));
    workers.kill(victim);
    workers.restart(victim);
  }
  Check c = w.finish("crash-");
  CHECK(c.workflows == runs);
  CHECK(c.steps_completed == runs * 5);
  std::vector<double> recoveries;
  std::vector<std::size_t> held;
  for (const auto& k : killed) {
    recoveries.push_back(recovery_ms(w, k));
    held.push_back(k.tasks_held.size());
  }
  CHECK(*std::max_element(held.begin(), held.end()) > 0);  // the kills did land on work in flight
  report("worker_sigkill", {{"workflows", runs},
                            {"activities_per_workflow", 5},
                            {"engine_processes", 3},
                            {"kills", kills},
                            {"tasks_held_at_each_kill", held},
                            {"lost", c.not_completed},
                            {"duplicate_committed_results", c.duplicate_commits},
                            {"duplicate_executions", c.duplicate_executions},
                            {"recovery_ms_max", *std::max_element(recoveries.begin(), recoveries.end())},
                            {"recovery_ms_each", recoveries},
                            {"total_s", ms_since(started) / 1000},
                            {"check", c.to_json()}});
}

TEST_CASE("fault 2: a kill at a failpoint around the activity's commit", "[fault][failpoint]") {
  struct Case {
    std::string failpoint;
    int executions;  // of the first step, all workers together
  };
  auto [failpoint, executions] = GENERATE(Case{"task.after_claim", 1},    // the body never ran in the killed worker
                                          Case{"task.before_commit", 2},  // it ran, its result was lost: runs again
                                          Case{"task.after_commit", 1});  // committed: never runs again
  CAPTURE(failpoint);
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  durable::fault::start_workflows(*w.starter, "fp-", 1, FlowInput{3, 0});
  workers.spawn({"DURABLE_FAILPOINTS=" + failpoint + "=kill@1"});
  CHECK(workers.wait_exit(0) == 128 + SIGKILL);
  const auto killed = Clock::now();
  workers.restart(0);  // no failpoint armed this time
  Check c = w.finish("fp-");
  CHECK(w.count("SELECT count(*) FROM {s}.fault_log WHERE step = 0") == executions);
  CHECK(w.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_completed' AND step = 0") == 1);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_effects") == 3);
  report("failpoint_kill", {{"failpoint", failpoint},
                            {"executions_of_step", w.count("SELECT count(*) FROM {s}.fault_log WHERE step = 0")},
                            {"committed_results_of_step", 1},
                            {"completed_after_ms", ms_since(killed)},
                            {"check", c.to_json()}});
}

TEST_CASE("fault 13: a kill around a start that commits its first step", "[fault][failpoint][start]") {
  struct Case {
    std::string failpoint;
    int runs;  // that went in
  };
  // The worker starts the run itself, so its first replay commits with the start: a kill before
  // that commit leaves nothing, one after it leaves the run with its first task leased to the dead
  // worker, which another takes over once the lease runs out and runs once.
  auto [failpoint, runs] = GENERATE(Case{"start.before_commit", 0}, Case{"start.after_commit", 1});
  CAPTURE(failpoint);
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  workers.spawn({"DURABLE_FAILPOINTS=" + failpoint + "=kill@1", "DURABLE_FAULT_START=fs-:1"});
  CHECK(workers.wait_exit(0) == 128 + SIGKILL);
  const auto killed = Clock::now();
  CHECK(w.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'fs-0'") == runs);
  CHECK(w.count("SELECT count(*) FROM {s}.tasks") == runs);   // its first step, leased at once
  CHECK(w.count("SELECT count(*) FROM {s}.fault_log") == 0);  // whose body never ran
  workers.restart(0);                                         // no failpoint, no start this time
  if (runs == 0) durable::fault::start_workflows(*w.starter, "fs-", 1, FlowInput{3, 0});  // started again
  Check c = w.finish("fs-");
  CHECK(c.workflows == 1);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_log WHERE step = 0") == 1);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_effects") == 3);
  report("start_failpoint_kill", {{"failpoint", failpoint},
                                  {"runs_in_after_kill", runs},
                                  {"executions_of_first_step", 1},
                                  {"completed_after_ms", ms_since(killed)},
                                  {"check", c.to_json()}});
}

TEST_CASE("fault 3: a frozen worker's late completion is rejected by fencing", "[fault][freeze]") {
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  const auto frozen = workers.spawn();
  durable::fault::start_workflows(*w.starter, "freeze-", 1, FlowInput{1, 1500});
  REQUIRE(wait_until([&] { return w.count("SELECT count(*) FROM {s}.fault_log") == 1; }, 30s));
  ::kill(workers.pid(frozen), SIGSTOP);  // mid-body, holding the task's lease
  const auto stopped = Clock::now();
  workers.spawn();  // takes over once the lease runs out
  REQUIRE(wait_until([&] { return w.count("SELECT count(*) FROM {s}.fault_log") == 2; }, 30s));
  const auto takeover = Clock::now();
  REQUIRE(durable::fault::wait_all_ended(w.url, w.schema, "freeze-", 60s));
  ::kill(workers.pid(frozen), SIGCONT);  // it finishes its body now, with a lease it lost
  const auto resumed = Clock::now();
  std::this_thread::sleep_for(2500ms);  // its body (1.5 s) ends and its completion is tried

  Check c = w.finish("freeze-");
  CHECK(c.duplicate_commits == 0);
  CHECK(c.executions == 2);
  // The committed result is the second worker's; the frozen one's was discarded.
  CHECK(w.count(fmt::format("SELECT count(*) FROM {{completed}} c WHERE (result->>'pid')::int = {}", workers.pid(1))) ==
        1);
  CHECK(::kill(workers.pid(frozen), 0) == 0);  // and the frozen worker lives on
  report("frozen_worker", {{"frozen_ms", std::chrono::duration<double, std::milli>(resumed - stopped).count()},
                           {"takeover_after_ms", std::chrono::duration<double, std::milli>(takeover - stopped).count()},
                           {"overlap_ms", std::chrono::duration<double, std::milli>(resumed - takeover).count()},
                           {"executions", c.executions},
                           {"committed_results", c.steps_completed},
                           {"check", c.to_json()}});
}

TEST_CASE("fault 4: PostgreSQL stopped (immediate and fast) and restarted under load", "[fault][restart]") {
  const int runs = full_run() ? 2000 : 200;
  const int restarts = full_run() ? 5 : 2;
  const int max_down_ms = full_run() ? 5000 : 1000;
  durable::testing::TemporaryPostgres server;  // our own: this test stops it
  Workload w(server.url());
  Workers workers(w.url, w.schema);
  for (int i = 0; i < 2; ++i) workers.spawn();
  REQUIRE(durable::fault::start_workflows(*w.starter, "pg-", runs, FlowInput{5, 20}) == runs);

  std::mt19937 random(std::random_device{}());
  Json each = Json::array();
  for (int r = 0; r < restarts; ++r) {
    std::this_thread::sleep_for(1s);
    const auto mode = r % 2 == 0 ? durable::testing::TemporaryPostgres::StopMode::immediate
                                 : durable::testing::TemporaryPostgres::StopMode::fast;
    const int down_ms = std::uniform_int_distribution<int>(0, max_down_ms)(random);
    server.stop(mode);
    std::this_thread::sleep_for(std::chrono::milliseconds{down_ms});
    server.start();
    const auto up = Clock::now();
    const long long before = w.count("SELECT count(*) FROM {s}.fault_log");
    auto executed = [&] { return w.count("SELECT count(*) FROM {s}.fault_log") > before; };
    REQUIRE(wait_until([&] { return executed() || durable::fault::wait_all_ended(w.url, w.schema, "pg-", 0s); }, 60s));
    each.push_back({{"mode", r % 2 == 0 ? "immediate" : "fast"},
                    {"down_ms", down_ms},
                    {"first_claim_after_ms", executed() ? Json(ms_since(up)) : Json("none (all done)")}});
  }
  Check c = w.finish("pg-");
  CHECK(c.workflows == runs);
  report("postgres_restart", {{"workflows", runs},
                              {"restarts", each},
                              {"lost", c.not_completed},
                              {"duplicate_committed_results", c.duplicate_commits},
                              {"duplicate_executions", c.duplicate_executions},
                              {"check", c.to_json()}});
}

TEST_CASE("fault 5: connections killed with pg_terminate_backend", "[fault][terminate]") {
  Workload w(durable::testing::database_url());
  auto terminate = [&](const std::string& where) {
    return w.count(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND " +
        where);
  };

  SECTION("the listening connection: wake-ups keep working after a catch-up poll") {
    auto options = durable::fault::workload_options(w.url, w.schema, "listener");
    options.poll_interval = 10s;  // so only a NOTIFY can wake the engine quickly
    durable::Engine engine(options);
    durable::fault::register_workload(engine, w.url, w.schema);
    engine.start();
    const std::string listening = "query LIKE 'LISTEN%" + w.schema + "%'";  // this engine's listener only
    REQUIRE(wait_until([&] { return w.count("SELECT count(*) FROM pg_stat_activity WHERE " + listening) > 0; }));
    CHECK(terminate(listening) >= 1);
    REQUIRE(wait_until([&] { return w.count("SELECT count(*) FROM pg_stat_activity WHERE " + listening) > 0; }));
    const auto start = Clock::now();
    auto run = engine.start_workflow<durable::fault::FaultFlow>("listen-1", FlowInput{2, 0});
    CHECK(run.result(30s) == 2);
    const double latency = ms_since(start);
    CHECK(latency < 5000);  // a poll would take 10 s per step
    Check c = w.finish("listen-");
    report("terminate_listener", {{"start_to_result_ms_after_reconnect", latency}, {"check", c.to_json()}});
  }

  SECTION("connections in the middle of a claim and during commits") {
    const int runs = full_run() ? 1000 : 100;
    Workers workers(w.url, w.schema);
    // Each claim holds its transaction open a moment, so the killer finds it mid-claim.
    // Named after the schema, so only these workers' sessions are cut, not other tests' running beside.
    for (int i = 0; i < 2; ++i) {
      workers.spawn({"DURABLE_FAILPOINTS=claim.before_commit=sleep:20", "PGAPPNAME=" + w.schema});
    }
    const std::string ours = "application_name = '" + w.schema + "' AND ";
    REQUIRE(durable::fault::start_workflows(*w.starter, "cut-", runs, FlowInput{5, 0}) == runs);
    long long mid_claim = 0, mid_statement = 0;
    const auto until = Clock::now() + (full_run() ? 20s : 4s);
    while (Clock::now() < until) {
      mid_claim += terminate(ours + "state = 'idle in transaction' AND query LIKE '%SKIP LOCKED%'");
      mid_statement += terminate(ours + "state = 'active'");
      std::this_thread::sleep_for(20ms);
    }
    Check c = w.finish("cut-");
    CHECK(mid_claim > 0);
    CHECK(mid_statement > 0);
    report("terminate_backends", {{"workflows", runs},
                                  {"killed_mid_claim", mid_claim},
                                  {"killed_mid_statement_or_commit", mid_statement},
                                  {"lost", c.not_completed},
                                  {"duplicate_committed_results", c.duplicate_commits},
                                  {"check", c.to_json()}});
  }
}

namespace {
// The same database as `url`, as another role.
std::string as_role(const std::string& url, const std::string& role) {
  if (url.find("://") == std::string::npos) return url + " user=" + role;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "user=" + role;
}

long long lines_containing(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  long long n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("fault 6: statement_timeout and idle_in_transaction_session_timeout on the engine's role",
          "[fault][limits]") {
  Workload w(durable::testing::database_url());
  const std::string role = w.schema + "_limited";
  auto admin = [&](const std::string& sql) {
    pqxx::connection conn(w.url);
    pqxx::nontransaction tx(conn);
    tx.exec0(sql);
  };
  admin("CREATE ROLE \"" + role + "\" LOGIN SUPERUSER");
  admin("ALTER ROLE \"" + role + "\" SET statement_timeout = '10ms'");
  admin("ALTER ROLE \"" + role + "\" SET idle_in_transaction_session_timeout = '20ms'");
  admin("ALTER ROLE \"" + role + "\" SET jit = off");  // as behind a pooler it must be
  // Every fifth claim holds its transaction open past the role's idle timeout.
  std::vector<std::string> env = {"DURABLE_FAILPOINTS=claim.before_commit=sleep:60/5", "DURABLE_LOG_LEVEL=debug"};
  // Through the tests' PgBouncer (DURABLE_TEST_POOLER=1), the workers need one that knows the role.
  std::optional<durable::testing::TemporaryPgBouncer> pooler;
  if (!durable::test::test_pooler_url().empty()) {
    pooler.emplace(w.url, durable::testing::TemporaryPgBouncer::Options{.users = {role}});
    env.push_back("DURABLE_TEST_POOLER_URL=" + pooler->url());
  }
  const std::string log = (std::filesystem::temp_directory_path() / (w.schema + ".log")).string();
  const int runs = full_run() ? 1000 : 100;
  {
    Workers workers(as_role(w.url, role), w.schema);
    workers.log_to(log);
    for (int i = 0; i < 2; ++i) workers.spawn(env);
    REQUIRE(durable::fault::start_workflows(*w.starter, "lim-", runs, FlowInput{5, 0}) == runs);
    Check c = w.finish("lim-");
    // A session the server ended mid-claim surfaces as a commit with an unknown outcome: the claim
    // is recovered by its token. A cancelled statement is retried as it is.
    const long long idle = lines_containing(log, "commit outcome unknown");
    const long long cancelled = lines_containing(log, "(57014)");
    CHECK(idle > 0);  // the server ended sessions, and the work went on
    report("role_limits", {{"workflows", runs},
                           {"statement_timeout", "10ms"},
                           {"idle_in_transaction_session_timeout", "20ms"},
                           {"sessions_ended_idle_in_transaction_retried", idle},
                           {"statements_cancelled_retried", cancelled},
                           {"lost", c.not_completed},
                           {"duplicate_committed_results", c.duplicate_commits},
                           {"check", c.to_json()}});
  }
  admin("DROP ROLE \"" + role + "\"");
  std::filesystem::remove(log);
}

TEST_CASE("fault 7: a long-open REPEATABLE READ transaction elsewhere", "[fault][long_transaction]") {
  const auto phase = full_run() ? std::chrono::seconds{300} : std::chrono::seconds{3};
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  for (int i = 0; i < 2; ++i) workers.spawn();
  // A feeder keeps about 200 runs in flight, so the load is the same all along and ends with the phases.
  std::atomic<bool> feeding{true};
  std::atomic<int> started{0};
  std::thread feeder([&] {
    while (feeding) {
      if (w.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running'") < 200) {
        started += durable::fault::start_workflows(*w.starter, "long-", 100, FlowInput{5, 0}, started);
      }
      std::this_thread::sleep_for(100ms);
    }
  });
  auto steps = [&] { return w.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_completed'"); };
  auto dead_tuples = [&] {
    return w.count("SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = '" + w.schema +
                   "'");
  };
  auto throughput = [&](std::chrono::seconds d) {
    const long long before = steps();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(d);
    return static_cast<double>(steps() - before) / (ms_since(t0) / 1000);
  };
  std::this_thread::sleep_for(2s);  // warm up
  const double baseline = throughput(phase / (full_run() ? 5 : 1));
  const long long dead_before = dead_tuples();

  pqxx::connection holder(w.url);
  pqxx::transaction<pqxx::isolation_level::repeatable_read> held(holder);
  held.exec("SELECT count(*) FROM \"" + w.schema + "\".tasks");  // the snapshot is taken: vacuum must keep rows
  const double with_held = throughput(phase);
  std::this_thread::sleep_for(1s);  // statistics are flushed about once a second
  const long long dead_held = dead_tuples();
  held.abort();
  feeding = false;
  feeder.join();

  Check c = w.finish("long-");
  CHECK(c.workflows == started);
  report("long_open_transaction", {{"phase_s", phase.count()},
                                   {"workflows", started.load()},
                                   {"steps_per_s_without", baseline},
                                   {"steps_per_s_with_held_snapshot", with_held},
                                   {"ratio", with_held / baseline},
                                   {"dead_tuples_before", dead_before},
                                   {"dead_tuples_while_held", dead_held},
                                   {"check", c.to_json()}});
}

TEST_CASE("fault 8: an activity that crashes its process on every attempt fails after max_attempts", "[fault][abort]") {
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  workers.spawn();
  durable::fault::start_workflows(*w.starter, "ok-", 20, FlowInput{3, 0});
  w.starter->start_workflow<durable::fault::CrashFlow>("abort-1", 0);
  int crashes = 0;
  // Each attempt takes the worker down; restart it until the crashing run has ended.
  while (!durable::fault::wait_all_ended(w.url, w.schema, "abort-", 0s)) {
    if (waitpid(workers.pid(0), nullptr, WNOHANG) == workers.pid(0)) {
      ++crashes;
      workers.restart(0);
    }
    std::this_thread::sleep_for(20ms);
    REQUIRE(crashes < 10);
  }
  Check ok = w.finish("ok-");
  CHECK(ok.workflows == 20);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_log WHERE workflow_id = 'abort-1'") == 3);  // max_attempts bodies
  CHECK(w.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'abort-1' AND status = 'failed'") == 1);
  CHECK(w.count("SELECT max(attempt) FROM {s}.tasks WHERE workflow_id = 'abort-1'") >= 3);
  report("abort_every_attempt", {{"process_crashes", crashes},
                                 {"bodies_run", 3},
                                 {"crashing_run", "failed after max_attempts"},
                                 {"other_workflows_completed", ok.workflows - ok.not_completed},
                                 {"check_others", ok.to_json()}});
}

TEST_CASE("fault 10: a kill at a failpoint around a transactional activity's commit",
          "[fault][failpoint][transactions]") {
  struct Case {
    std::string failpoint;
    int executions;  // of the first step, all workers together
  };
  // Before the commit the body's transaction is open, its row written: the kill rolls it back.
  auto [failpoint, executions] = GENERATE(Case{"task.before_commit", 2}, Case{"task.after_commit", 1});
  CAPTURE(failpoint);
  Workload w(durable::testing::database_url());
  Workers workers(w.url, w.schema);
  durable::fault::start_workflows(*w.starter, "txfp-", 1, FlowInput{3, 0}, 0, true);
  workers.spawn({"DURABLE_FAILPOINTS=" + failpoint + "=kill@1"});
  CHECK(workers.wait_exit(0) == 128 + SIGKILL);
  // What the kill left: the step's row is there exactly when its result is journaled.
  const long long rows = w.count("SELECT count(*) FROM {s}.fault_tx_effects WHERE step = 0");
  const long long journaled =
      w.count("SELECT count(*) FROM {journal} j WHERE kind = 'activity_completed' AND step = 0");
  CHECK(rows == journaled);
  CHECK(rows == (failpoint == "task.after_commit" ? 1 : 0));
  workers.restart(0);  // no failpoint armed this time
  Check c = w.finish("txfp-");
  CHECK(w.count("SELECT count(*) FROM {s}.fault_log WHERE step = 0") == executions);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_tx_effects") == 3);
  report("transactional_failpoint_kill", {{"failpoint", failpoint},
                                          {"executions_of_step", executions},
                                          {"rows_at_kill", rows},
                                          {"journaled_at_kill", journaled},
                                          {"check", c.to_json()}});
}

TEST_CASE("fault 11: transactional steps under worker kills and PostgreSQL restarts write each row once",
          "[fault][restart][transactions]") {
  const int runs = full_run() ? 1000 : 200;    // five steps each: 1,000 steps in the short version
  const int rounds = full_run() ? 8 : 4;       // each kills a worker; every other one restarts PostgreSQL too
  durable::testing::TemporaryPostgres server;  // our own: this test stops it
  Workload w(server.url());
  Workers workers(w.url, w.schema);
  for (int i = 0; i < 3; ++i) workers.spawn();
  // Each body sleeps inside its open transaction: kills and restarts land on transactions in flight.
  REQUIRE(durable::fault::start_workflows(*w.starter, "txr-", runs, FlowInput{5, 100}, 0, true) == runs);

  std::mt19937 random(std::random_device{}());
  Json restarts = Json::array();
  std::vector<std::size_t> held;
  for (int r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(700ms);
    const auto victim = std::uniform_int_distribution<std::size_t>(0, workers.size() - 1)(random);
    held.push_back(record_kill(w, workers.pid(victim)).tasks_held.size());
    workers.kill(victim);
    if (r % 2 == 1) {
      const bool immediate = r % 4 == 1;
      const long long running = w.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running'");
      server.stop(immediate ? durable::testing::TemporaryPostgres::StopMode::immediate
                            : durable::testing::TemporaryPostgres::StopMode::fast);
      std::this_thread::sleep_for(std::chrono::milliseconds{std::uniform_int_distribution<int>(0, 1000)(random)});
      server.start();
      restarts.push_back({{"mode", immediate ? "immediate" : "fast"}, {"runs_in_flight", running}});
    }
    workers.restart(victim);
  }
  Check c = w.finish("txr-");
  CHECK(c.workflows == runs);
  CHECK(c.steps_completed == runs * 5);
  CHECK(w.count("SELECT count(*) FROM {s}.fault_tx_effects") == runs * 5);
  CHECK(w.count("SELECT count(DISTINCT (workflow_id, step)) FROM {s}.fault_tx_effects") == runs * 5);
  CHECK(*std::max_element(held.begin(), held.end()) > 0);     // the kills did land on transactions in flight
  CHECK(restarts[0]["runs_in_flight"].get<long long>() > 0);  // and so did the first restart
  report("transactional_restart", {{"workflows", runs},
                                   {"transactional_steps", runs * 5},
                                   {"worker_kills", rounds},
                                   {"tasks_held_at_each_kill", held},
                                   {"postgres_restarts", restarts},
                                   {"rows", w.count("SELECT count(*) FROM {s}.fault_tx_effects")},
                                   {"duplicate_rows", c.duplicate_effects},
                                   {"duplicate_executions", c.duplicate_executions},
                                   {"check", c.to_json()}});
}

TEST_CASE("the checker catches each violation it looks for", "[fault][checker]") {
  Workload w(durable::testing::database_url());
  {
    durable::Engine engine(durable::fault::workload_options(w.url, w.schema, "checker"));
    durable::fault::register_workload(engine, w.url, w.schema);
    engine.start();
    durable::fault::start_workflows(engine, "chk-", 2, FlowInput{3, 0});
    durable::fault::start_workflows(engine, "chk-", 1, FlowInput{3, 0}, 2, true);  // chk-2, transactional
    REQUIRE(durable::fault::wait_all_ended(w.url, w.schema, "chk-", 60s));
  }
  REQUIRE(durable::fault::check(w.url, w.schema, "chk-").ok());
  auto broken = [&](const std::string& sql) {
    pqxx::connection conn(w.url);
    pqxx::nontransaction tx(conn);
    tx.exec(durable::test::test_sql(sql, "\"" + w.schema + "\""));
    Check c = durable::fault::check(w.url, w.schema, "chk-");
    CHECK_FALSE(c.ok());
    return c;
  };
  SECTION("a lost effect") {
    CHECK(broken("DELETE FROM {s}.fault_effects WHERE workflow_id = 'chk-0' AND step = 1").missing_effects == 1);
  }
  SECTION("a transactional step's effect committed twice") {
    CHECK(broken("INSERT INTO {s}.fault_tx_effects VALUES ('chk-2', 1, 2, 1)").duplicate_effects == 1);
  }
  SECTION("an effect of a step that never completed") {
    CHECK(broken("INSERT INTO {s}.fault_effects VALUES ('chk-0', 9, 1, 1)").stray_effects == 1);
  }
  SECTION("a result committed twice") {
    CHECK(broken("INSERT INTO {s}.journal (run_id, workflow_id, seq, kind, step, name, data) SELECT run_id, "
                 "workflow_id, next_seq, "
                 "'activity_completed', 0, 'fault_step', '{{\"result\": {{}}}}' FROM {s}.workflows WHERE workflow_id "
                 "= 'chk-0'; UPDATE {s}.workflows SET next_seq = next_seq + 1 WHERE workflow_id = 'chk-0'")
              .duplicate_commits == 1);
  }
  SECTION("a gap in the journal") {
    // The row holding event 2 (a row holds the events of one commit).
    CHECK(
        broken("DELETE FROM {s}.journal j USING {s}.workflows w WHERE w.workflow_id = 'chk-1' AND j.run_id = w.run_id "
               "AND j.seq = (SELECT max(r.seq) FROM {s}.journal r WHERE r.run_id = w.run_id AND r.seq <= 2)")
            .journal_gaps == 1);
  }
  SECTION("a journal that no longer replays") {
    // Step 1's scheduled event, a row's first event or one of the events committed with it.
    CHECK(
        broken("UPDATE {s}.journal j SET name = CASE WHEN j.kind = 'activity_scheduled' AND j.step = 1 THEN 'another' "
               "ELSE j.name END, more = (SELECT jsonb_agg(CASE WHEN e->>0 = 'activity_scheduled' AND e->>1 = '1' "
               "THEN jsonb_set(e, '{{2}}', '\"another\"') ELSE e END ORDER BY o) "
               "FROM jsonb_array_elements(j.more) WITH ORDINALITY AS x(e, o)) "
               "FROM {s}.workflows w WHERE w.workflow_id = 'chk-1' AND j.run_id = w.run_id")
            .replay_failures == 1);
  }
  SECTION("a task left leased, a run not ended") {
    Check c = broken(
        "INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, available_at) "
        "SELECT run_id, workflow_id, 9, 'fault_step', '{{}}', '{{}}', 'running', now() FROM {s}.workflows "
        "WHERE workflow_id = 'chk-0'; "
        "UPDATE {s}.workflows SET status = 'running' WHERE workflow_id = 'chk-1'");
    CHECK(c.leased_tasks == 1);
    CHECK(c.not_completed == 1);
  }
}

namespace {
// Echoes its input; {"nan": true} makes it return a result JSON cannot carry.
struct JsonEcho {
  static constexpr auto name = "json_echo";
  Json operator()(durable::ActivityContext&, const Json& in) const {
    if (in.is_object() && in.contains("nan")) return {{"value", std::nan("")}};
    return in;
  }
};
struct JsonFlow {
  static constexpr auto name = "json_flow";
  Json operator()(durable::WorkflowContext& ctx, const Json& in) {
    if (in.is_object() && in.contains("nan_input")) return ctx.call<JsonEcho>(Json{{"x", std::nan("")}});
    return ctx.call<JsonEcho>(in);
  }
};

Json nested(int depth) {
  Json j = 1;
  for (int i = 0; i < depth; ++i) j = Json::array({j});
  return j;
}
}  // namespace

TEST_CASE("fault 9: hostile input is refused with a typed error, writes nothing and crashes nothing",
          "[fault][bad_input]") {
  Workload w(durable::testing::database_url());
  auto options = durable::fault::workload_options(w.url, w.schema, "bad-input");
  durable::Engine engine(options);
  engine.add<JsonEcho>().add<JsonFlow>().add_trigger<JsonFlow>("t");
  engine.start();
  auto rows = [&] { return w.count("SELECT (SELECT count(*) FROM {s}.workflows) + (SELECT count(*) FROM {s}.tasks)"); };
  const std::string utf8_invalid = "caf\xC3";  // a truncated two-byte sequence
  struct Bad {
    std::string what;
    Json input;
    std::string message;
  };
  const std::vector<Bad> payloads = {
      {"NaN", Json(std::nan("")), "NaN or Infinity"},
      {"Infinity", Json{{"amount", std::numeric_limits<double>::infinity()}}, "at '/amount'"},
      {"NUL in a string", Json{{"note", std::string("a\0b", 3)}}, "NUL character"},
      {"NUL in a key", Json{{std::string("k\0", 2), 1}}, "NUL character"},
      {"invalid UTF-8", Json{{"name", utf8_invalid}}, "invalid UTF-8"},
      {"invalid UTF-8 in a key", Json{{utf8_invalid, 1}}, "invalid UTF-8"},
      {"nested 300 deep", nested(300), "deeper than 256"},
      {"oversized", Json(std::string(durable::max_payload_bytes + 1, 'x')), "the limit is"},
  };
  int refused = 0;
  for (const auto& bad : payloads) {
    CAPTURE(bad.what);
    durable::test::expect_throw<durable::PayloadError>([&] { engine.start_workflow<JsonFlow>("bad", bad.input); },
                                                       "the input of workflow 'bad'", bad.message);
    durable::test::expect_throw<durable::PayloadError>(
        [&] { engine.schedules().create("bad", {.workflow = JsonFlow::name, .input = bad.input, .cron = "@hourly"}); },
        "the input of schedule 'bad'", bad.message);
    durable::test::expect_throw<durable::PayloadError>(
        [&] {
          engine.deliver("t", durable::Event{"e" + std::to_string(refused), bad.input});
        },
        bad.message);
    ++refused;
  }
  CHECK(rows() == 0);
  CHECK(w.count("SELECT count(*) FROM {s}.schedules") == 0);

  // Ids, keys and names: NUL bytes, injection, over-long names.
  durable::test::expect_throw<durable::InvalidWorkflowId>(
      [&] { engine.start_workflow<JsonFlow>(std::string("a\0b", 3), Json(1)); }, "NUL");
  for (std::string schema : {std::string("x\"; DROP TABLE t;--"), std::string(64, 'a'), std::string("a\0b", 3)}) {
    durable::test::expect_throw<durable::InvalidSchemaName>(
        [&] { durable::Engine bad_schema({.database_url = w.url, .schema = schema}); }, "is not allowed");
  }
  CHECK(rows() == 0);

  // Inside a run: a bad activity input fails the run before any task is written; a result that
  // cannot be stored fails the activity at once (retrying cannot fix it).
  auto input_run = engine.start_workflow<JsonFlow>("bad-activity-input", Json{{"nan_input", true}});
  durable::test::expect_throw<durable::WorkflowFailed>([&] { input_run.result(30s); }, "the input of activity",
                                                       "NaN or Infinity");
  CHECK(w.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'bad-activity-input'") == 0);
  auto result_run = engine.start_workflow<JsonFlow>("bad-activity-result", Json{{"nan", true}});
  durable::test::expect_throw<durable::WorkflowFailed>([&] { result_run.result(30s); }, "the result of activity",
                                                       "NaN or Infinity");
  CHECK(w.count("SELECT max(attempt) FROM {s}.tasks WHERE workflow_id = 'bad-activity-result'") == 1);
  report("bad_input", {{"payload_kinds_refused", refused},
                       {"entry_points_each", Json::array({"start_workflow", "schedules.create", "deliver"})},
                       {"rows_written_by_refused_input", 0},
                       {"max_payload_bytes", durable::max_payload_bytes},
                       {"max_payload_depth", durable::max_payload_depth}});
}
