// Fault 12, failover (docs/operations.md, Failover; docs/reliability.md): worker processes run
// the workload on a URL naming a primary and its streaming standby; mid-run, replication stalls
// a second (the primary's WAL sender frozen), the primary stops hard, and the standby is promoted.
// A watcher reads, until the primary goes, which steps it shows completed: a commit shows there
// only once it is acknowledged (with synchronous replication, once the standby has it too). With
// synchronous replication none of them is lost; with asynchronous replication those of the stall
// are, and the engines run those steps again, never committing one twice. Short by default (CI);
// DURABLE_FAULT_FULL=1 runs 1,000 workflows (scripts/fault.sh).
#include <signal.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "fault/harness.hpp"
#include "support/test_db.hpp"

using namespace std::chrono_literals;
using durable::Json;
using durable::fault::Check;
using durable::fault::FlowInput;
using durable::fault::ms_since;
using durable::testing::TemporaryPostgres;

namespace {

using StepSet = std::set<std::string>;

// The completed steps ("<workflow id>:<seq>") of `schema` on the server `conn` is connected to.
StepSet completed_steps(pqxx::connection& conn, const std::string& schema) {
  StepSet steps;
  pqxx::nontransaction tx(conn);
  for (const auto& r : tx.exec(durable::test::test_sql(
           "SELECT workflow_id || ':' || seq FROM {journal} jw WHERE kind = 'activity_completed'",
           "\"" + schema + "\""))) {
    steps.insert(r[0].as<std::string>());
  }
  return steps;
}

// Reads a server's completed steps every 20 ms until it stops answering: last() is then what it
// showed committed just before it went.
class LastSeen {
 public:
  LastSeen(std::string url, std::string schema)
      : url_(std::move(url)), schema_(std::move(schema)), thread_([this] { watch(); }) {}
  ~LastSeen() {
    stop_ = true;
    thread_.join();
  }
  LastSeen(const LastSeen&) = delete;
  LastSeen& operator=(const LastSeen&) = delete;
  StepSet last() {
    const std::lock_guard lock(mutex_);
    return last_;
  }

 private:
  void watch() {
    try {
      pqxx::connection conn(url_);
      while (!stop_) {
        StepSet steps = completed_steps(conn, schema_);
        {
          const std::lock_guard lock(mutex_);
          last_ = std::move(steps);
        }
        std::this_thread::sleep_for(20ms);
      }
    } catch (const std::exception&) {  // the server went: last_ is its last answer
    }
  }
  std::string url_, schema_;
  std::mutex mutex_;
  StepSet last_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the rest is made
};

long long one_value(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  return pqxx::nontransaction(conn).exec1(sql)[0].as<long long>();
}

// A process stopped (SIGSTOP) until this goes, unless it was let go or ended before.
class Frozen {
 public:
  explicit Frozen(pid_t pid) : pid_(pid) { REQUIRE(::kill(pid_, SIGSTOP) == 0); }
  ~Frozen() { thaw(); }
  Frozen(const Frozen&) = delete;
  Frozen& operator=(const Frozen&) = delete;
  void thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }
  void ended() { pid_ = -1; }  // killed with its server: nothing to continue

 private:
  pid_t pid_;
};

}  // namespace

TEST_CASE("fault 12: the primary stopped hard mid-run and its standby promoted", "[fault][failover]") {
  const bool synchronous = GENERATE(true, false);
  INFO((synchronous ? "synchronous" : "asynchronous") << " replication");
  const int runs = durable::fault::full_run() ? 1000 : 200;
  TemporaryPostgres primary({.synchronous_standby_names = synchronous ? "*" : ""});
  TemporaryPostgres standby({.standby_of = &primary});
  durable::fault::Workload w(durable::test::multi_host_url({primary.url(), standby.url()}));
  durable::fault::Workers workers(w.url, w.schema);
  for (int i = 0; i < 2; ++i) workers.spawn();
  // Steps of 100 ms: the runs are still going when the primary stops.
  REQUIRE(durable::fault::start_workflows(*w.starter, "fo-", runs, FlowInput{5, 100}) == runs);
  LastSeen seen(primary.url(), w.schema);
  const std::string completed = durable::test::test_sql(
      "SELECT count(*) FROM {journal} jw WHERE kind = 'activity_completed'", "\"" + w.schema + "\"");
  REQUIRE(durable::test::wait_until([&] { return one_value(primary.url(), completed) >= 100; }, 60s));
  if (synchronous) {
    REQUIRE(one_value(primary.url(), "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1);
  }

  // Replication stalls: with it synchronous, commits wait (unseen, unacknowledged); asynchronous,
  // they go on and the standby lacks them.
  Frozen walsender(static_cast<pid_t>(one_value(primary.url(), "SELECT pid FROM pg_stat_replication")));
  if (synchronous) {  // commits are waiting for the standby when the primary goes
    REQUIRE(durable::test::wait_until(
        [&] {
          return one_value(primary.url(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'") > 0;
        },
        30s));
  } else {  // the primary has commits the standby lacks
    const long long replicated = one_value(standby.url(), completed);
    REQUIRE(durable::test::wait_until([&] { return one_value(primary.url(), completed) >= replicated + 50; }, 30s));
  }
  const long long in_flight = w.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running'");
  // Immediate: backends end at once; the frozen WAL sender is killed after 5 s (PostgreSQL's rule).
  primary.stop(TemporaryPostgres::StopMode::immediate);
  walsender.ended();
  const StepSet acknowledged = seen.last();
  // The workers wait while the standby is promoted and read: a lost step they ran again at once
  // would look kept.
  std::vector<std::unique_ptr<Frozen>> workers_frozen;
  for (std::size_t i = 0; i < workers.size(); ++i) workers_frozen.push_back(std::make_unique<Frozen>(workers.pid(i)));
  const auto promoting = durable::fault::Clock::now();
  standby.promote();
  const double promote_ms = ms_since(promoting);
  pqxx::connection promoted(standby.url());
  const StepSet kept = completed_steps(promoted, w.schema);
  long long lost = 0;
  for (const std::string& step : acknowledged) lost += kept.count(step) == 0 ? 1 : 0;
  workers_frozen.clear();
  const auto thawed = durable::fault::Clock::now();
  const auto before = kept.size();
  REQUIRE(durable::test::wait_until([&] { return completed_steps(promoted, w.schema).size() > before; }, 60s));
  const double first_step_ms = ms_since(thawed);

  Check c = w.finish("fo-");
  CHECK(c.workflows == runs);
  CHECK(in_flight > 0);
  CHECK(acknowledged.size() > 0);
  if (synchronous) {
    CHECK(lost == 0);  // every commit the primary showed was on the standby
  } else {
    CHECK(lost > 0);  // the stall's commits: lost, and run again (the check above holds)
  }
  durable::fault::report(synchronous ? "failover_synchronous" : "failover_asynchronous",
                         {{"workflows", runs},
                          {"runs_in_flight_at_stop", in_flight},
                          {"steps_acknowledged_by_primary", acknowledged.size()},
                          {"acknowledged_steps_lost", lost},
                          {"pg_ctl_promote_ms", promote_ms},
                          {"first_step_after_workers_resumed_ms", first_step_ms},
                          {"duplicate_committed_results", c.duplicate_commits},
                          {"duplicate_executions", c.duplicate_executions},
                          {"check", c.to_json()}});
}
