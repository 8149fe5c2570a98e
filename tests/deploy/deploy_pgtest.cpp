// The deploy test: 1,000 runs of version 1 of a workflow are in flight when a version 2 build,
// another binary whose workflow takes its steps in another order, takes over. Under the block
// policy no run fails and no side effect happens until version 1 comes back and finishes them
// all; with the change wrapped in patched(), version 2 finishes them all itself.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "support/process.hpp"
#include "support/test_db.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace fs = std::filesystem;

namespace {

constexpr int runs = 1000;

// What the workers' activity bodies did: per process, per order, per activity, how many times.
struct Effects {
  std::map<pid_t, int> by_process;
  std::map<std::string, std::map<std::string, int>> by_order;
};

class Deploy {
 public:
  Deploy() : dir_(fs::temp_directory_path() / testing::unique_schema("deploy")) { fs::create_directories(dir_); }
  ~Deploy() {
    for (pid_t pid : serving_) stop(pid);
    fs::remove_all(dir_);
  }

  // A worker of version `version` (1 or 2) serving until stopped.
  pid_t serve(int version, bool patched = false) {
    std::vector<std::string> args{db.schema(), "serve"};
    if (patched) args.emplace_back("patched");
    const pid_t pid = spawn_program(worker(version), db.url(), args, env(), (dir_ / "stderr").string());
    serving_.push_back(pid);
    return pid;
  }
  void stop(pid_t pid) {
    kill(pid, SIGTERM);
    CHECK(wait_for(pid) == 0);
    std::erase(serving_, pid);
  }
  // Starts orders deploy-first .. deploy-(first + count - 1) from a version's own binary.
  void start_orders(int version, int first, int count) {
    REQUIRE(wait_for(spawn_program(worker(version), db.url(),
                                   {db.schema(), "start", std::to_string(first), std::to_string(count)}, env(),
                                   (dir_ / "stderr").string())) == 0);
  }
  // Waits (up to `limit`) until `n` runs have waited in receive("go"), or are in another state.
  bool runs_where(const std::string& condition, long long n, std::chrono::seconds limit = 240s) {
    return wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE " + condition) == n; }, limit);
  }
  bool waiting_for_go(long long n) {
    return wait_until(
        [&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'receive_started'") == n; }, 240s);
  }
  void send_go(int first, int count) {
    Engine client(db.options());
    for (int i = first; i < first + count; ++i) client.send("deploy-" + std::to_string(i), "go", std::string("go"));
  }
  Effects effects() const {
    Effects e;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("effects.", 0) != 0) continue;
      const pid_t pid = std::stoi(name.substr(8));
      std::ifstream in(entry.path());
      for (std::string what, order; in >> what >> order;) {
        ++e.by_process[pid];
        ++e.by_order[order][what];
      }
    }
    return e;
  }
  std::string stderr_text() const {
    std::ifstream in(dir_ / "stderr");
    return {std::istreambuf_iterator<char>(in), {}};
  }

  TestDb db;

 private:
  static std::string worker(int version) { return version == 1 ? DURABLE_DEPLOY_WORKER_V1 : DURABLE_DEPLOY_WORKER_V2; }
  std::vector<std::string> env() const { return {"DURABLE_DEPLOY_EFFECTS=" + (dir_ / "effects").string()}; }
  fs::path dir_;
  std::vector<pid_t> serving_;
};

// Every order of [first, first + count) made each side effect exactly once.
void each_effect_once(const Effects& e, int first, int count) {
  int wrong = 0;
  for (int i = first; i < first + count; ++i) {
    const auto it = e.by_order.find("deploy-" + std::to_string(i));
    const bool once = it != e.by_order.end() && it->second.size() == 3 && it->second.at("reserve") == 1 &&
                      it->second.at("charge") == 1 && it->second.at("ship") == 1;
    wrong += once ? 0 : 1;
  }
  CHECK(wrong == 0);
}

// 1,000 orders of version 1, each past its reservation and waiting for "go", and then sent it.
void v1_in_flight(Deploy& d) {
  const pid_t v1 = d.serve(1);
  d.start_orders(1, 0, runs);
  REQUIRE(d.waiting_for_go(runs));
  d.stop(v1);
  const Effects before = d.effects();
  CHECK(before.by_process.at(v1) == runs);  // one reservation each
  d.send_go(0, runs);                       // all runnable: whoever serves next replays them
}

}  // namespace

TEST_CASE(
    "under the block policy a reordered v2 build fails no run of v1 in flight and makes no side effect, "
    "and v1 brought back finishes them all",
    "[pg][versioning][deploy]") {
  Deploy d;
  v1_in_flight(d);
  const pid_t v2 = d.serve(2);
  REQUIRE(d.runs_where("status = 'running' AND blocked_at IS NOT NULL", runs));
  std::this_thread::sleep_for(1s);  // its retries write nothing either
  CHECK(d.db.count("SELECT count(*) FROM {s}.workflows WHERE status <> 'running'") == 0);
  CHECK(d.db.count("SELECT count(*) FROM {s}.workflows WHERE blocked->>'app_version' = 'v2'") == runs);
  CHECK(d.db.count("SELECT count(*) FROM {s}.tasks") == 0);  // no charge scheduled: its replays went nowhere
  d.stop(v2);
  CHECK(d.effects().by_process.count(v2) == 0);

  d.serve(1);  // the rollback: version 1 takes its runs on at once and finishes them
  REQUIRE(d.runs_where("status = 'completed'", runs));
  CHECK(d.db.count("SELECT count(*) FROM {s}.workflows WHERE blocked_at IS NOT NULL") == 0);
  const Effects after = d.effects();
  CHECK(after.by_process.count(v2) == 0);
  each_effect_once(after, 0, runs);
  INFO(d.stderr_text());
}

TEST_CASE(
    "with the change patched, a reordered v2 build finishes 1,000 runs of v1 in flight on their old path, "
    "and its new runs take the new one",
    "[pg][versioning][deploy]") {
  Deploy d;
  v1_in_flight(d);
  d.serve(2, /*patched=*/true);
  REQUIRE(d.runs_where("status = 'completed'", runs));
  CHECK(d.db.count("SELECT count(*) FROM {s}.workflows WHERE status <> 'completed' OR blocked_at IS NOT NULL") == 0);
  CHECK(d.db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'patched'") == 0);
  d.start_orders(2, runs, 10);
  REQUIRE(d.waiting_for_go(runs + 10));
  d.send_go(runs, 10);
  REQUIRE(d.runs_where("status = 'completed'", runs + 10));
  CHECK(d.db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'patched' AND name = 'charge-first'") == 10);
  each_effect_once(d.effects(), 0, runs + 10);
  // Which path each run took, by its journal: the old one reserves at step 0, the new one
  // journals its marker there and charges at step 1.
  CHECK(d.db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_scheduled' AND step = 0 AND "
                   "name = 'reserve'") == runs);
  CHECK(d.db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_scheduled' AND step = 1 AND "
                   "name = 'charge'") == 10);
  INFO(d.stderr_text());
}
