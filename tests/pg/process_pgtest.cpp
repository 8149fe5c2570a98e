#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "pg/migrations.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
namespace fs = std::filesystem;

namespace {
std::map<std::string, int> count_lines(const std::string& path) {
  std::map<std::string, int> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) ++lines[line];
  return lines;
}
}  // namespace

TEST_CASE("a worker killed with SIGKILL mid-activity is finished by a new engine from the journal", "[pg][crash]") {
  TestDb db;
  const fs::path dir = fs::temp_directory_path() / ("durable-crash-" + db.schema());
  fs::create_directories(dir);
  const std::string log = (dir / "steps.log").string();
  const std::string hang = (dir / "hang").string();
  std::ofstream(hang) << "block step 3 until this file is removed\n";

  Engine client(db.options());
  register_all(client);
  auto run = client.start_workflow<StepsWorkflow>("crashy", StepsInput{log, hang, 6, 3});

  pid_t worker = spawn_worker(db.url(), {db.schema(), "serve"});
  // Wait until the worker is inside step 3, then kill it without warning.
  REQUIRE(wait_until([&] { return count_lines(log).count("step 3 attempt 1") == 1; }, 60s));
  kill(worker, SIGKILL);
  CHECK(wait_for(worker) == 128 + SIGKILL);
  fs::remove(hang);

  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(run.result(60s) == 10 * (0 + 1 + 2 + 3 + 4 + 5));

  auto lines = count_lines(log);
  // Steps completed before the kill ran exactly once; the interrupted one ran again.
  for (int step : {0, 1, 2}) {
    CHECK(lines["step " + std::to_string(step) + " attempt 1"] == 1);
    CHECK(lines.count("step " + std::to_string(step) + " attempt 2") == 0);
  }
  CHECK(lines["step 3 attempt 1"] == 1);
  CHECK(lines["step 3 attempt 2"] == 1);
  CHECK(lines["step 4 attempt 1"] == 1);
  CHECK(lines["step 5 attempt 1"] == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'lease_expired'") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'crashy' AND kind = 'activity_completed'") ==
        6);
  fs::remove_all(dir);
}

TEST_CASE("three engine processes run 300 five-step workflows, each step committed exactly once",
          "[pg][multiprocess]") {
  TestDb db;
  Engine client(db.options());  // only starts runs and reads results
  register_all(client);
  std::vector<pid_t> workers;
  for (int i = 0; i < 3; ++i) workers.push_back(spawn_worker(db.url(), {db.schema(), "serve"}));

  // Who holds running tasks, sampled while the runs go on (a completed task's row is gone).
  std::set<std::string> owners;
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done.load()) {
      try {
        for (const auto& r : db.query("SELECT DISTINCT lease_owner FROM {s}.tasks WHERE status = 'running'"))
          owners.insert(r[0].as<std::string>());
      } catch (const pqxx::undefined_table&) {  // the workers have not made the schema yet
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 300; ++i) runs.push_back(client.start_workflow<ChainWorkflow>("chain-" + std::to_string(i), i));
  for (int i = 0; i < 300; ++i) REQUIRE(runs[static_cast<std::size_t>(i)].result(180s) == i + 5);
  done = true;
  sampler.join();

  for (pid_t w : workers) kill(w, SIGTERM);
  for (pid_t w : workers) CHECK(wait_for(w) == 0);

  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_completed'") == 1500);
  CHECK(db.count("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {s}.journal_events "
                 "WHERE kind = 'activity_completed' GROUP BY run_id, step) x") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks") == 0);  // each went with its outcome's commit
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'completed'") == 300);
  // The work was shared: more than one process ran activities.
  CHECK(owners.size() >= 2);
}

TEST_CASE("ten processes migrating an empty database at once all come up", "[pg][migrations]") {
  TestDb db;
  std::vector<pid_t> workers;
  for (int i = 0; i < 10; ++i) workers.push_back(spawn_worker(db.url(), {db.schema(), "migrate"}));
  for (pid_t w : workers) CHECK(wait_for(w) == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == pg::latest_schema_version());  // each migration once
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
}
