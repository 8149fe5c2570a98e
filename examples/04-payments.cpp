// Idempotency end to end: a payment started twice under one id, an event delivered twice,
// and a keyed charge asked for by two workflows: the card is charged once. Then a saga: a
// checkout reserves stock and charges the card, shipping fails, and the charge is refunded and
// the stock released, newest first.
//
// Run: build/examples/04-payments   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <fmt/ranges.h>

#include <atomic>
#include <vector>

using namespace std::chrono_literals;

static std::atomic<int> charges{0};

struct Payment {
  std::string order_id;
  int cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Payment, order_id, cents)

// [keyed]
struct Charge {
  static constexpr auto name = "charge";
  // One charge per order, across every workflow and run; pass the same key to the card
  // network, so that even an attempt repeated after a crash is charged once there too.
  static std::optional<std::string> idempotency_key(const Payment& p) { return "charge:" + p.order_id; }
  std::string operator()(durable::ActivityContext&, const Payment& p) const {
    fmt::print("  charging {} cents for {} (charge #{})\n", p.cents, p.order_id, ++charges);
    return "ch_" + p.order_id;
  }
};
// [keyed]

struct Pay {
  static constexpr auto name = "pay";
  std::string operator()(durable::WorkflowContext& ctx, const Payment& p) { return ctx.call<Charge>(p); }
};

static std::atomic<int> refunds{0}, releases{0};

struct ReserveStock {
  static constexpr auto name = "reserve_stock";
  std::string operator()(durable::ActivityContext&, const std::string& order_id) const { return "hold_" + order_id; }
};
struct ReleaseStock {
  static constexpr auto name = "release_stock";
  bool operator()(durable::ActivityContext&, const std::string& hold) const {
    fmt::print("  releasing {} (release #{})\n", hold, ++releases);
    return true;
  }
};
struct Refund {
  static constexpr auto name = "refund";
  // A compensation runs at least once like any activity: key it, and pass the key on to the card network.
  static std::optional<std::string> idempotency_key(const std::string& charge) { return "refund:" + charge; }
  bool operator()(durable::ActivityContext&, const std::string& charge) const {
    fmt::print("  refunding {} (refund #{})\n", charge, ++refunds);
    return true;
  }
};
struct Ship {
  static constexpr auto name = "ship";
  std::string operator()(durable::ActivityContext&, const std::string& order_id) const {
    throw std::runtime_error("no courier delivers " + order_id + " today");
  }
};

// [saga]
struct Checkout {
  static constexpr auto name = "checkout";
  std::string operator()(durable::WorkflowContext& ctx, const Payment& p) {
    durable::Saga saga(ctx);  // after each step, what undoes it
    try {
      const std::string hold = ctx.call<ReserveStock>(p.order_id);
      saga.add_compensation<ReleaseStock>(hold);
      const std::string charge = ctx.call<Charge>(p);
      saga.add_compensation<Refund>(charge, {.retry = durable::RetryPolicy{.max_attempts = 5}});  // its own policy
      return ctx.call<Ship>(p.order_id);
    } catch (const durable::ActivityFailed&) {
      saga.compensate();  // refund, then release: newest first, each a durable activity call
      throw;              // the run fails with the shipping error
    } catch (const durable::WorkflowCancelled&) {
      saga.compensate();
      throw;  // the run ends cancelled
    }
  }
};
// [saga]

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, "durable_example_payments");
  durable::Engine engine({.database_url = url, .schema = "durable_example_payments"});
  engine.add<Charge>().add<Pay>().add<ReserveStock>().add<ReleaseStock>().add<Refund>().add<Ship>().add<Checkout>();
  engine.add_trigger<Pay>("checkout_completed");  // events start `pay` as checkout_completed:{event_id}
  engine.start();
  const Payment payment{"order-9", 2500};

  // [ids]
  auto first = engine.start_or_find<Pay>("pay:order-9", payment);
  auto again = engine.start_or_find<Pay>("pay:order-9", payment);  // a retried request: same id
  fmt::print("start 1 started a run: {}; start 2 started a run: {} (same run: {})\n", first.started, again.started,
             first.run.run_id() == again.run.run_id());
  try {
    engine.start_workflow<Pay>("pay:order-9", payment);
  } catch (const durable::WorkflowAlreadyStarted& e) {
    fmt::print("start_workflow refuses a taken id: {}\n", e.what());
  }
  // [ids]

  // [events]
  durable::Event event{"evt-123", payment};  // the broker's message id: stable across redeliveries
  auto delivered = engine.deliver("checkout_completed", event);
  auto redelivered = engine.deliver("checkout_completed", event);
  fmt::print("event delivered twice: first started {}, second started {}\n", delivered.started, redelivered.started);
  // [events]

  // Two different workflows (the start and the event) charged the same order: the keyed
  // activity ran once, and both runs got its result.
  const std::string by_start = first.run.result(30s);
  const std::string by_event = delivered.run.result(30s);
  const int charged = charges.load();
  fmt::print("results: {} and {}; the card was charged {} time(s)\n", by_start, by_event, charged);

  // The saga: shipping fails, so the charge is refunded and the stock released, each once.
  auto checkout = engine.start_workflow<Checkout>("checkout:order-10", Payment{"order-10", 4200});
  bool failed_shipping = false;
  try {
    checkout.result(30s);
  } catch (const durable::WorkflowFailed& e) {
    fmt::print("checkout failed: {}\n", e.what());
    failed_shipping = std::string(e.what()).find("no courier") != std::string::npos;
  }
  std::vector<std::string> completed;  // the steps the journal holds as completed, in its order
  for (const auto& e : engine.runs().history(checkout.run_id()).events) {
    if (e.kind == "activity_completed") completed.push_back(e.name);
  }
  fmt::print("checkout's completed steps, in journal order: {}\n", fmt::join(completed, ", "));
  const bool compensated = completed == std::vector<std::string>{"reserve_stock", "charge", "refund", "release_stock"};

  engine.stop();
  durable::testing::drop_schema(url, "durable_example_payments");
  const bool charged_once = charged == 1 && !again.started && !redelivered.started;
  return charged_once && failed_shipping && compensated && refunds == 1 && releases == 1 ? 0 : 1;
}
