// The dispatcher without a database: it claims no more tasks than it has free slots, runs their
// bodies on its pool, retries failures through the store under their policy, fails an attempt
// past its timeout while its body runs on, and hands every outcome to the committer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "pipeline/dispatcher.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "unit/stage_fakes.hpp"

using namespace durable;
using namespace durable::detail;
using namespace std::chrono_literals;

namespace {

pg::ClaimedTask task(std::int64_t id, const std::string& name, Json input, ResolvedActivityOptions options = {}) {
  pg::ClaimedTask t;
  t.task_id = id;
  t.run_id = "run-" + std::to_string(id);
  t.workflow_id = "wf-" + std::to_string(id);
  t.name = name;
  t.input = std::move(input);
  t.options = std::move(options);
  t.attempt = 1;
  t.lease_token = 1000 + id;  // one per attempt
  return t;
}

ResolvedActivityOptions attempts(int max_attempts, Duration timeout = default_activity_timeout) {
  ResolvedActivityOptions o;
  o.retry.max_attempts = max_attempts;
  o.retry.base = 1ms;
  o.timeout = timeout;
  return o;
}

// A dispatcher over fakes, its claim loop on a thread of its own until the rig goes.
struct DispatcherRig {
  Registry registry;
  PausedTypes paused;
  test::FakeTaskStore store;
  test::FakeOutcomes outcomes;
  MetricsRecorder metrics;
  EngineSignals signals;
  std::atomic<bool> stopping{false};
  std::optional<Dispatcher> dispatcher;
  std::thread loop;

  DispatcherRig() {
    registry.activities.emplace("echo", make_activity<std::string>("echo", {}, test::EchoActivity{}));
    registry.activities.emplace("boom", make_activity<std::string>("boom", {}, test::BoomActivity{}));
    registry.activities.emplace("slow", make_activity<int>("slow", {}, test::SlowActivity{}));
  }
  void start(int capacity, Duration poll_interval = 20ms) {
    paused.serve({}, registry.activity_names());
    dispatcher.emplace(DispatcherSettings{"me@test", "test", poll_interval, 1s, false}, capacity, registry, paused,
                       store, outcomes, metrics, signals, stopping);
    dispatcher->start_watching();
    loop = std::thread([this] { dispatcher->loop(); });
  }
  // Stops claiming and waits for every body to return.
  void stop() {
    stopping = true;
    signals.task_work.notify();
    if (loop.joinable()) loop.join();
    if (dispatcher) dispatcher->drain(5s);
    dispatcher.reset();
  }
  ~DispatcherRig() { stop(); }
};

}  // namespace

TEST_CASE("the dispatcher runs a claimed task's body and hands its result to the committer", "[unit][dispatcher]") {
  DispatcherRig rig;
  rig.store.add(task(1, "echo", "hi"));
  rig.start(2);
  REQUIRE(rig.outcomes.wait_for_count(1));
  const auto seen = rig.outcomes.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].task_id == 1);
  CHECK(seen[0].succeeded);
  CHECK(seen[0].result == "hi");
  CHECK(rig.store.retried().empty());
  CHECK(rig.store.released().empty());
  CHECK(rig.metrics.claims == 1);
  // The count moves just after the commit returns, so it may trail the committer by a moment.
  CHECK(test::wait_until([&] { return rig.metrics.completions.load() == 1; }));
  CHECK(rig.metrics.completions == 1);
}

TEST_CASE("a failed attempt is retried through the store while its policy allows, then the failure is committed",
          "[unit][dispatcher]") {
  DispatcherRig rig;
  rig.store.add(task(1, "boom", "first", attempts(2)));
  pg::ClaimedTask last = task(2, "boom", "second", attempts(2));
  last.attempt = 2;  // its policy's last attempt
  rig.store.add(last);
  rig.start(2);
  REQUIRE(rig.outcomes.wait_for_count(1));
  REQUIRE(rig.store.wait_until([](test::FakeTaskStore& s) { return s.retried_count_locked() == 1; }));
  const auto retried = rig.store.retried();
  CHECK(retried[0].task_id == 1);
  CHECK(retried[0].error_type == "std::runtime_error");
  const auto seen = rig.outcomes.seen();
  REQUIRE(seen.size() == 1);  // the first attempt's failure went to the store, never to the committer
  CHECK(seen[0].task_id == 2);
  CHECK_FALSE(seen[0].succeeded);
  CHECK(seen[0].error_type == "std::runtime_error");
}

TEST_CASE("an attempt past its timeout is failed while its body runs on, and its late result is discarded",
          "[unit][dispatcher]") {
  DispatcherRig rig;
  rig.store.add(task(1, "slow", 600, attempts(1, 50ms)));
  rig.start(1);
  REQUIRE(rig.outcomes.wait_for_count(1));
  auto seen = rig.outcomes.seen();
  CHECK_FALSE(seen[0].succeeded);
  CHECK(seen[0].error_type == "durable::ActivityTimeout");
  CHECK(rig.metrics.timeouts == 1);
  // The body returns at 600 ms: its result must not reach the committer.
  rig.stop();
  CHECK(rig.outcomes.seen().size() == 1);
}

TEST_CASE("the dispatcher never runs more bodies than its slots, and claims no more than it has free",
          "[unit][dispatcher]") {
  DispatcherRig rig;
  std::atomic<int> running{0}, most{0};
  rig.registry.activities.emplace("count", make_activity<int>("count", {}, [&](ActivityContext&, const int& ms) {
                                    const int now = ++running;
                                    int seen = most.load();
                                    while (now > seen && !most.compare_exchange_weak(seen, now)) {
                                    }
                                    std::this_thread::sleep_for(std::chrono::milliseconds{ms});
                                    --running;
                                    return ms;
                                  }));
  for (int i = 1; i <= 6; ++i) rig.store.add(task(i, "count", 40));
  rig.start(2);
  REQUIRE(rig.outcomes.wait_for_count(6));
  CHECK(most.load() <= 2);
  CHECK(most.load() >= 1);
  CHECK(rig.store.largest_claim() <= 2);
  for (const auto& s : rig.outcomes.seen()) CHECK(s.succeeded);
}

TEST_CASE("slots freed after a claim that found nothing send no claim: tasks leased at once need none",
          "[unit][dispatcher]") {
  DispatcherRig rig;
  rig.start(4, 30s);                                                   // no poll within the test
  REQUIRE(test::wait_until([&] { return rig.store.claims() >= 1; }));  // its first claim finds nothing
  std::this_thread::sleep_for(50ms);
  const int before = rig.store.claims();
  // 40 tasks run at once, each on a slot reserved for it as a replay's commit leases it.
  for (int i = 0; i < 40;) {
    Reservation slot = rig.dispatcher->slots().reserve(1);
    if (slot.count() == 0) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    rig.dispatcher->slots().launch({task(i, "echo", "at once")}, std::move(slot));
    ++i;
  }
  REQUIRE(rig.outcomes.wait_for_count(40));
  // Before, each freed slot probed the queue: about one claim per task, each finding nothing.
  CHECK(rig.store.claims() - before <= 2);
}

TEST_CASE("a task retried after a delay is claimed when the delay ends, without a NOTIFY or a poll",
          "[unit][dispatcher]") {
  DispatcherRig rig;
  ResolvedActivityOptions retried = attempts(2);
  retried.retry.base = 300ms;  // its second attempt is due 300 ms (jittered) after the first failed
  retried.retry.backoff = Backoff::constant;
  rig.store.add(task(1, "boom", "first", retried));
  rig.start(2, 30s);
  REQUIRE(rig.store.wait_until([](test::FakeTaskStore& s) { return s.retried_count_locked() == 1; }));
  const auto failed = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(50ms);  // the task is back in the queue, as the database has it, once due
  pg::ClaimedTask second = task(1, "echo", "second", attempts(2));
  second.attempt = 2;
  rig.store.add(second);
  REQUIRE(rig.outcomes.wait_for_count(1));
  CHECK(std::chrono::steady_clock::now() - failed < 5s);  // not the 30 s poll
}
