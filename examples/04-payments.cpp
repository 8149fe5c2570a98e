// Idempotency end to end: a payment started twice under one id, an event delivered twice,
// and a keyed charge asked for by two workflows: the card is charged once.
//
// Run: build/examples/04-payments   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <durable/durable.hpp>
#include <durable/testing.hpp>
#include <fmt/format.h>

#include <atomic>

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

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, "durable_example_payments");
  durable::Engine engine({.database_url = url, .schema = "durable_example_payments"});
  engine.add<Charge>().add<Pay>();
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
  fmt::print("results: {} and {}; the card was charged {} time(s)\n", by_start, by_event, charges.load());
  engine.stop();
  durable::testing::drop_schema(url, "durable_example_payments");
  return charges == 1 && !again.started && !redelivered.started ? 0 : 1;
}
