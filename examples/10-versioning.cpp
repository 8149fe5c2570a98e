// Versioning: changing workflow code while runs are in flight. Version 1 of an order workflow
// reserves stock, waits for the warehouse, then charges the card. Version 2 charges first. An
// order started under version 1 is waiting when version 2 is deployed:
//   1. deployed as is, version 2 cannot replay the order's journal: the run is blocked, not
//      failed, and the replay check (the deploy gate) shows why before any harm is done;
//   2. deployed with the change wrapped in ctx.patched(), the in-flight order finishes on its old
//      path while new orders take the new one.
// The hour the warehouse takes goes by with the test clock.
//
// Run: build/examples/10-versioning   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <thread>

using namespace std::chrono_literals;

struct Reserve {
  static constexpr auto name = "reserve";
  std::string operator()(durable::ActivityContext&, const std::string& order) const { return "reserved " + order; }
};
struct Charge {
  static constexpr auto name = "charge";
  std::string operator()(durable::ActivityContext&, const std::string& order) const { return "charged " + order; }
};

// Version 1: reserve, wait for the warehouse, charge.
struct OrderV1 {
  static constexpr auto name = "order";
  std::vector<std::string> operator()(durable::WorkflowContext& ctx, const std::string& order) {
    auto reserved = ctx.call<Reserve>(order);
    ctx.sleep(1h);  // the warehouse
    return {reserved, ctx.call<Charge>(order)};
  }
};

// Version 2 as first written: charge first. Runs journaled by version 1 cannot replay it.
struct OrderV2Unpatched {
  static constexpr auto name = "order";
  std::vector<std::string> operator()(durable::WorkflowContext& ctx, const std::string& order) {
    auto charged = ctx.call<Charge>(order);
    ctx.sleep(1h);
    return {charged, ctx.call<Reserve>(order)};
  }
};

// [patched]
// Version 2 as it should be written: new runs charge first, runs that went past this point
// under version 1 keep reserving first. Once no such run is left, replace patched() with
// deprecate_patch("charge-first") and drop the old branch; once no run holds the marker
// either, drop that call too (docs/versioning.md).
struct OrderV2 {
  static constexpr auto name = "order";
  std::vector<std::string> operator()(durable::WorkflowContext& ctx, const std::string& order) {
    std::vector<std::string> done;
    if (ctx.patched("charge-first")) {
      done.push_back(ctx.call<Charge>(order));
      ctx.sleep(1h);
      done.push_back(ctx.call<Reserve>(order));
    } else {
      done.push_back(ctx.call<Reserve>(order));
      ctx.sleep(1h);
      done.push_back(ctx.call<Charge>(order));
    }
    ctx.logger().info("order {} done: {} then {}", order, done[0], done[1]);  // once, however often it replays
    return done;
  }
};
// [patched]

namespace {
// Waits until `ready()` holds, checking every 20 ms for at most 30 s.
template <typename Ready>
void wait_until(Ready ready, const char* what) {
  for (int i = 0; i < 1500; ++i) {
    if (ready()) return;
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error(fmt::format("gave up waiting for {}", what));
}
}  // namespace

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_versioning";
  durable::testing::drop_schema(url, schema);
  auto options = [&](std::string app_version) {
    return durable::EngineOptions{
        .database_url = url, .schema = schema, .poll_interval = 100ms, .app_version = std::move(app_version)};
  };
  auto waiting_in_sleep = [](durable::Runs& runs, const std::string& id) {
    const auto history = runs.history(runs.latest(id).run_id);
    return history.events.back().kind == "timer_started";
  };

  // Version 1 starts order-1, which waits for the warehouse when version 1 is taken down.
  durable::RunId order_1_run;
  {
    durable::Engine v1(options("1.0"));
    v1.add<Reserve>().add<Charge>().add<OrderV1>();
    v1.start();
    order_1_run = v1.start_workflow<OrderV1>("order-1", "order-1").run_id();
    wait_until([&] { return waiting_in_sleep(v1.runs(), "order-1"); }, "order-1 to wait for the warehouse");
  }
  durable::testing::advance_clock(url, schema, 2h);  // the warehouse is done: order-1 goes on with whatever runs

  // [gate]
  // The deploy gate: replay the histories of the running runs against version 2 before it takes
  // any of them. Nothing is written; a divergence names the call that changed.
  {
    durable::Engine candidate(options("2.0"));  // not started: only its code is used
    candidate.add<Reserve>().add<Charge>().add<OrderV2Unpatched>();
    const auto report = durable::testing::check_replay(url, schema, candidate);
    for (const auto& run : report.divergent) {
      fmt::print("replay check: {} diverges at step {}: the journal holds {}, the code asks for {}\n", run.workflow_id,
                 run.divergence->step, run.divergence->journaled, run.divergence->asked);
    }
  }
  // [gate]

  // [blocked]
  // Deployed anyway: order-1 is blocked, not failed. It stays running, visible and counted.
  {
    durable::Engine v2(options("2.0"));
    v2.add<Reserve>().add<Charge>().add<OrderV2Unpatched>();
    v2.start();
    durable::Runs& runs = v2.runs();
    wait_until([&] { return runs.get(order_1_run).blocked; }, "order-1 to be blocked");
    const durable::RunInfo run = runs.get(order_1_run);
    fmt::print("order-1 is {} and blocked by version {}: {}\n", to_string(run.status), run.blocked_by->app_version,
               run.blocked_by->divergence.asked);
    fmt::print("blocked runs: {}\n", *v2.metrics().workflows_blocked);
  }
  // [blocked]

  // Version 2.1, with the change patched: it takes order-1 on at once (version 2.0 blocked it,
  // not 2.1) and finishes it on the old path; a new order takes the new one.
  durable::Engine v21(options("2.1"));
  v21.add<Reserve>().add<Charge>().add<OrderV2>();
  v21.start();
  auto order_1 = v21.workflow<OrderV2>("order-1");
  const auto old_path = order_1.result(30s);
  fmt::print("order-1 (started by 1.0): {} then {}\n", old_path[0], old_path[1]);

  auto order_2 = v21.start_workflow<OrderV2>("order-2", "order-2");
  wait_until([&] { return waiting_in_sleep(v21.runs(), "order-2"); }, "order-2 to wait for the warehouse");
  durable::testing::advance_clock(url, schema, 2h);
  const auto new_path = order_2.result(30s);
  fmt::print("order-2 (started by 2.1): {} then {}\n", new_path[0], new_path[1]);

  // Runs by the app version that last ran them.
  const auto by_21 = v21.runs().list({.filter = {.app_version = "2.1"}});
  fmt::print("runs last replayed by 2.1: {}\n", by_21.runs.size());

  const bool ok = old_path == std::vector<std::string>{"reserved order-1", "charged order-1"} &&
                  new_path == std::vector<std::string>{"charged order-2", "reserved order-2"} && by_21.runs.size() == 2;
  v21.stop();
  durable::testing::drop_schema(url, schema);
  return ok ? 0 : 1;
}
