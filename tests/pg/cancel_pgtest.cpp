#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/expect.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/workers.hpp"

using namespace durable;
using namespace durable::test;

namespace {

std::string unique_log_path() {
  const std::string name = "durable-refund-" + std::to_string(getpid()) + "-" + std::to_string(std::rand()) + ".log";
  return (std::filesystem::temp_directory_path() / name).string();
}

// The refund's log: a file of its own per test, gone at the end.
struct RefundLog {
  std::string path = unique_log_path();
  ~RefundLog() { std::filesystem::remove(path); }
  int refunds() const {  // attempts of the refund's body
    std::ifstream in(path);
    int lines = 0;
    for (std::string line; std::getline(in, line);) lines += line.rfind("step 99 ", 0) == 0 ? 1 : 0;
    return lines;
  }
};

bool charging(const TestDb& db) { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }

}  // namespace

TEST_CASE_METHOD(RunningEngine, "a cancel is seen at the current await: the code cleans up, the run ends cancelled",
                 "[pg][cancel]") {
  RefundLog log;
  auto run = engine.start_workflow<RefundingWorkflow>("refund-1", RefundInput{30'000, log.path});
  REQUIRE(wait_until([&] { return charging(db); }));
  CHECK(run.cancel("the customer changed their mind"));
  auto cancelled = expect_throw<WorkflowCancelled>([&] { run.result(20s); }, "the customer changed their mind");
  CHECK(cancelled.reason() == "the customer changed their mind");
  CHECK(run.status() == WorkflowStatus::cancelled);
  CHECK(log.refunds() == 1);
  CHECK(events_of(db, "refund-1", "cancel_requested") == 1);
  CHECK(events_of(db, "refund-1", "cancel_delivered") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'refund-1' AND kind = 'cancel_delivered' "
                 "AND data->'dropped' = '[0]' AND (data->>'awaited')::int = 0") == 1);
  CHECK(events_of(db, "refund-1", "workflow_cancelled") == 1);
  // The charge was dropped: its task cancelled, its body told (it stopped long before its 30 s).
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE step = 0 AND status = 'cancelled'") == 1);
  CHECK(wait_until([&] { return engine.metrics().activity_busy == 0; }, 5s));
}

TEST_CASE_METHOD(RunningEngine, "code that catches the cancel and returns ends its run completed", "[pg][cancel]") {
  RefundLog log;
  auto run = engine.start_workflow<RefundingWorkflow>("refund-2", RefundInput{30'000, log.path, true});
  REQUIRE(wait_until([&] { return charging(db); }));
  CHECK(run.cancel("duplicate order"));
  CHECK(run.result(20s) == "refunded: duplicate order");
  CHECK(run.status() == WorkflowStatus::completed);
  CHECK(log.refunds() == 1);
}

TEST_CASE("a cancel asked for while no engine runs is seen at the next call once one starts", "[pg][cancel]") {
  TestDb db;
  RefundLog log;
  Engine client(db.options());  // never started
  register_all(client);
  auto run = client.start_workflow<RefundingWorkflow>("refund-3", RefundInput{30'000, log.path});
  CHECK(run.cancel("before it began"));
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start();
    CHECK_THROWS_AS(run.result(20s), WorkflowCancelled);
  }
  CHECK(log.refunds() == 1);
  // Seen at the first call, before the charge was ever scheduled.
  CHECK(events_of(db, "refund-3", "activity_scheduled") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'refund-3' AND kind = 'cancel_delivered' "
                 "AND (data->>'awaited')::int = -1 AND (data->>'at_step')::int = 0") == 1);
}

TEST_CASE_METHOD(RunningEngine, "a cancelled parent's children are asked at once, while its cleanup goes on",
                 "[pg][cancel][children]") {
  auto parent = engine.start_workflow<GuardianWorkflow>("guardian", 0);
  REQUIRE(wait_until([&] { return events_of(db, "guardian/c", "receive_started") == 1; }));
  CHECK(parent.cancel("shutting the shop"));
  // The child, waiting for a message that never comes, was asked when the parent saw its cancel.
  CHECK(parent.result(20s) == "child cancelled: its parent run was cancelled (parent-close policy: cancel)");
}

TEST_CASE_METHOD(RunningEngine, "terminate ends a run at once, without its code, and asks its children to cancel",
                 "[pg][cancel]") {
  auto root = engine.start_workflow<NestWorkflow>("terminated", NestInput{1});
  REQUIRE(wait_until([&] { return events_of(db, "terminated/c", "receive_started") == 1; }));
  const OperatorAction ops{"ops", "stuck since the outage"};
  CHECK(engine.runs().terminate(root.run_id(), ops));
  CHECK(root.status() == WorkflowStatus::cancelled);
  CHECK(events_of(db, "terminated", "cancel_delivered") == 0);
  CHECK_THROWS_AS(engine.workflow<NestWorkflow>("terminated/c").result(20s), WorkflowCancelled);
  CHECK_FALSE(engine.runs().terminate(root.run_id(), ops));
  CHECK(engine.runs().audit().at(0).action == "terminate");
}

#ifdef DURABLE_TEST_WORKER
TEST_CASE("engines killed while a cancel is delivered and while the cleanup commits commit the cleanup once",
          "[pg][cancel][crash]") {
  TestDb db;
  RefundLog log;
  Engine client(db.options());
  register_all(client);
  // A plain charge of 3 s does not notice the cancel: the refund's commit comes first.
  auto run = client.start_workflow<RefundingWorkflow>("refund-crash", RefundInput{3'000, log.path, false, true});
  // The first worker dies right after committing the cancel's delivery (its second replay commit).
  pid_t first = worker_with(db, "replay.after_commit=kill@2");
  REQUIRE(wait_until([&] { return charging(db); }, 30s));
  CHECK(run.cancel("crash me"));
  CHECK(exit_within(first, 60s) == 128 + SIGKILL);
  CHECK(events_of(db, "refund-crash", "cancel_delivered") == 1);
  CHECK(log.refunds() == 0);
  past_its_leases(db);
  // The second runs the refund's body and dies before committing its outcome.
  CHECK(exit_within(worker_with(db, "task.before_commit=kill@1"), 60s) == 128 + SIGKILL);
  CHECK(log.refunds() == 1);
  past_its_leases(db);
  pid_t last = spawn_worker(db.url(), {db.schema(), "serve"});
  CHECK_THROWS_AS(run.result(120s), WorkflowCancelled);
  kill(last, SIGTERM);
  wait_for(last);
  CHECK(log.refunds() == 2);  // at least once: the body ran again after the kill ...
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'refund-crash' AND kind = "
                 "'activity_completed' AND name = 'record_step'") == 1);  // ... its outcome committed once
  CHECK(events_of(db, "refund-crash", "cancel_delivered") == 1);
  CHECK(events_of(db, "refund-crash", "workflow_cancelled") == 1);
}
#endif
