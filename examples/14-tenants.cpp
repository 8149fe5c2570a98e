// Tenants: two tenants share one queue of workflow runs. The queue admits four runs at once across
// every engine, at most two of one tenant, and tenants take turns: "small" queues its 4 runs after
// "big" queued 40, and small's runs all end while most of big's backlog still waits. Then an
// operator pauses the queue, and a run started meanwhile waits, queued, until it is resumed. Last,
// priority aging: on a queue of one run at a time, a low-priority report that waited rises to the
// priority of the urgent runs started after it, and, the oldest there, is admitted first.
//
// Run: build/examples/14-tenants   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

struct Work {  // a tenant's job is one short call to a downstream service
  static constexpr auto name = "tenant_work";
  std::string operator()(durable::ActivityContext&, const std::string& job) const {
    std::this_thread::sleep_for(20ms);
    return "done " + job;
  }
};

struct TenantJob {
  static constexpr auto name = "tenant_job";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& job) { return ctx.call<Work>(job); }
};

// Starts `count` jobs of `tenant` on the "tenants" queue, numbered from `first`.
std::vector<durable::WorkflowHandle<std::string>> enqueue(durable::Engine& engine, const std::string& tenant, int first,
                                                          int count) {
  std::vector<durable::WorkflowHandle<std::string>> runs;
  for (int i = first; i < first + count; ++i) {
    const std::string job = fmt::format("{}-{:02}", tenant, i);
    // [start]
    durable::StartOptions options;
    options.queue = "tenants";         // the run waits there, queued, until the queue's limits admit it
    options.concurrency_key = tenant;  // whose run it is: the limit per key, and the turns, are per tenant
    runs.push_back(engine.start_workflow<TenantJob>(job, job, options));
    // [start]
  }
  return runs;
}

// What the queue holds now, as every engine sees it in the database; keeps the most runs it saw
// admitted at once, in all and of one tenant.
struct Watch {
  durable::QueueInfo queue;
  std::map<std::string, durable::QueueKeyInfo> tenants;
  std::int64_t most_admitted = 0, most_admitted_of_one_tenant = 0;

  void look(durable::Engine& engine, bool print) {
    // [watch]
    const durable::QueueInfo now = engine.queues().get("tenants");  // limits, pause, queued, running, throttled
    const std::vector<durable::QueueKeyInfo> keys = engine.queues().keys("tenants");  // the most queued first
    // [watch]
    queue = now;
    tenants.clear();
    for (const durable::QueueKeyInfo& key : keys) tenants[key.key] = key;
    most_admitted = std::max(most_admitted, queue.running);
    for (const auto& entry : tenants) {
      most_admitted_of_one_tenant = std::max(most_admitted_of_one_tenant, entry.second.running);
    }
    if (print) {
      fmt::print(
          "queued {:2}, running {}, throttled {:2} | big: {:2} queued, {} running | small: {} queued, {} running\n",
          queue.queued, queue.running, queue.throttled, tenants["big"].queued, tenants["big"].running,
          tenants["small"].queued, tenants["small"].running);
    }
  }
};

// Priority aging on queue "reports": true when the report that waited went before the urgent runs.
bool report_goes_first(durable::Engine& engine) {
  // [aging]
  // Held by an operator, the reports queue lines up a report at priority 0, then, later, three
  // urgent runs at priority 2. Waited three steps, the report has risen to 2 (no higher: the
  // highest waiting) and is the oldest there, so it goes first when the queue is resumed.
  engine.queues().pause("reports", {.actor = "ana", .reason = "line the reports up"});
  durable::StartOptions report;
  report.queue = "reports";
  auto nightly = engine.start_workflow<TenantJob>("nightly-report", "nightly-report", report);
  std::this_thread::sleep_for(700ms);
  durable::StartOptions urgent_options = report;
  urgent_options.priority = 2;
  std::vector<durable::WorkflowHandle<std::string>> urgent;
  for (int i = 0; i < 3; ++i) {
    const std::string job = fmt::format("urgent-{}", i);
    urgent.push_back(engine.start_workflow<TenantJob>(job, job, urgent_options));
  }
  engine.queues().resume("reports", {.actor = "ana", .reason = "go"});
  // [aging]
  nightly.result(30s);
  for (const auto& run : urgent) run.result(30s);
  auto ended = [&](const auto& run) { return engine.runs().get(run.run_id()).ended_at.value(); };
  const bool report_first =
      std::all_of(urgent.begin(), urgent.end(), [&](const auto& run) { return ended(nightly) < ended(run); });
  fmt::print("priority aging: the report queued first at priority 0 ran {} the three urgent runs\n",
             report_first ? "before" : "after");
  return report_first;
}

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_tenants";
  durable::testing::drop_schema(url, schema);
  durable::Engine engine({.database_url = url, .schema = schema});
  engine.add<Work>().add<TenantJob>();
  // [queue]
  // Four runs of the queue at once, all engines together, and at most two of one tenant; tenant
  // small is on a bigger plan: two turns in each round to every other tenant's one. This engine
  // serves the queue: it admits the queue's runs and runs them, as any engine that serves it.
  engine.add_queue({.name = "tenants", .concurrency = 4, .key_concurrency = 2, .key_weights = {{"small", 2}}});
  // Reports: one at a time; work waiting rises one priority every 200 ms, up to the highest waiting.
  engine.add_queue({.name = "reports", .concurrency = 1, .priority_aging = 200ms});
  // [queue]
  engine.start();

  auto big = enqueue(engine, "big", 0, 40);     // a tenant with a backlog
  auto small = enqueue(engine, "small", 0, 4);  // and one with a few runs, started after it
  fmt::print("big queued 40 runs, then small queued 4\n");

  Watch watch;
  std::int64_t big_left = -1;  // big's runs not ended yet when small's last one had ended
  const auto give_up = std::chrono::steady_clock::now() + 45s;
  for (int i = 0;; ++i) {
    const bool small_ended = std::all_of(small.begin(), small.end(), [](const auto& run) {
      return run.status() != durable::WorkflowStatus::running;  // a queued run is running too: its code waits
    });
    watch.look(engine, i % 10 == 0);
    if (small_ended && big_left < 0) {
      big_left = watch.tenants["big"].queued + watch.tenants["big"].running;
      fmt::print("small's 4 runs have ended; big has {} of its 40 still to run\n", big_left);
    }
    if (watch.queue.queued + watch.queue.running == 0) break;
    if (std::chrono::steady_clock::now() > give_up) {
      fmt::print("the queue did not drain within 45 s\n");
      return 1;
    }
    std::this_thread::sleep_for(20ms);
  }
  int done = 0;
  for (const auto* runs : {&big, &small}) {
    for (const auto& run : *runs) done += run.result(30s) == "done " + run.id().str() ? 1 : 0;
  }
  fmt::print("{} runs done; at most {} admitted at once (limit 4), at most {} of one tenant (limit 2)\n", done,
             watch.most_admitted, watch.most_admitted_of_one_tenant);

  // [pause]
  // An operator pauses the queue: it admits nothing more until resumed (admitted runs would go on).
  engine.queues().pause("tenants", {.actor = "ana", .reason = "the tenants' API is down for maintenance"});
  auto late = enqueue(engine, "small", 4, 1).at(0);
  std::this_thread::sleep_for(300ms);
  const durable::QueueInfo paused = engine.queues().get("tenants");  // small-04 waits: 1 queued, 0 running
  engine.queues().resume("tenants", {.actor = "ana", .reason = "the API is back"});
  // [pause]
  fmt::print("paused by {} ({}): {} queued, {} running\n", paused.paused_by, paused.paused_reason, paused.queued,
             paused.running);
  const std::string late_result = late.result(30s);
  const durable::AuditEntry resumed = engine.runs().audit({.limit = 1}).at(0);
  fmt::print("resumed: {}; audit: {} of queue {} by {}: {}\n", late_result, resumed.action,
             resumed.details.value("queue", "?"), resumed.actor, resumed.reason);

  const bool report_first = report_goes_first(engine);

  engine.stop();
  durable::testing::drop_schema(url, schema);
  const bool ok = big_left > 0 && done == 44 && watch.most_admitted <= 4 && watch.most_admitted_of_one_tenant <= 2 &&
                  paused.paused && paused.queued == 1 && paused.running == 0 && late_result == "done small-04" &&
                  resumed.action == "queue_resume" && report_first;
  return ok ? 0 : 1;
}
