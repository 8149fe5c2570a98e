// Order processing: charge the card, reserve stock, wait, send a follow-up.
// A worker process is killed in the middle of an activity; a new engine finishes the order
// from the journal, and the card is charged only once.
//
// Run: build/examples/01-order-processing   (starts a throwaway PostgreSQL unless
// DURABLE_DATABASE_URL is set; it works in its own schema, "durable_example_orders")
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

using namespace std::chrono_literals;

// [types]
struct Order {
  std::string id;
  int total_cents = 0;
  std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, total_cents, sku)

struct Receipt {
  std::string charge_id;
  int amount_cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Receipt, charge_id, amount_cents)
// [types]

static bool crash_during_reservation = false;  // set in the first worker process only

static void say(const std::string& what) {
  fmt::print("[pid {}] {}\n", getpid(), what);
  std::fflush(stdout);  // the worker dies by SIGKILL: nothing buffered would survive
}

// [activities]
struct ChargeCard {
  static constexpr auto name = "charge_card";
  static durable::ActivityOptions options() {
    return {.retry = durable::RetryPolicy{.max_attempts = 5, .backoff = durable::Backoff::exponential, .base = 200ms},
            .timeout = 10s};
  }
  Receipt operator()(durable::ActivityContext&, const Order& order) const {
    say(fmt::format("charging {} cents for {}", order.total_cents, order.id));
    return {"ch_" + order.id, order.total_cents};
  }
};

struct ReserveStock {
  static constexpr auto name = "reserve_stock";
  static durable::ActivityOptions options() {
    return {.retry = durable::RetryPolicy{.max_attempts = 3}, .timeout = 2s};
  }
  std::string operator()(durable::ActivityContext& ctx, const Order& order) const {
    say(fmt::format("reserving {} for {} (attempt {})", order.sku, order.id, ctx.attempt()));
    if (crash_during_reservation) {
      say("*** the worker process crashes now (SIGKILL) ***");
      raise(SIGKILL);
    }
    return "reservation-" + order.sku;
  }
};

struct SendFollowUp {
  static constexpr auto name = "send_follow_up";
  bool operator()(durable::ActivityContext&, const std::string& order_id) const {
    say(fmt::format("sending follow-up email for {}", order_id));
    return true;
  }
};
// [activities]

// [workflow]
struct PlaceOrder {
  static constexpr auto name = "place_order";
  nlohmann::json operator()(durable::WorkflowContext& ctx, const Order& order) {
    Receipt receipt = ctx.call<ChargeCard>(order);
    std::string reservation = ctx.call<ReserveStock>(order);
    ctx.sleep(2s);  // a durable timer: in production this might be 24h
    ctx.call<SendFollowUp>(order.id);
    return {{"charge", receipt.charge_id}, {"reservation", reservation}};
  }
};
// [workflow]

static durable::EngineOptions engine_options(const std::string& url) {
  durable::EngineOptions options;
  options.database_url = url;
  options.schema = "durable_example_orders";
  options.lease_margin = 1s;  // a crashed worker's activity is retried ~3 s after it was claimed
  return options;
}

static void register_order_processing(durable::Engine& engine) {
  engine.add<ChargeCard>().add<ReserveStock>().add<SendFollowUp>().add<PlaceOrder>();
}

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, "durable_example_orders");  // start the demo afresh
  const Order order{"order-42", 4999, "blue-widget"};

  // The first worker runs in a child process, which dies in the middle of reserving stock.
  pid_t worker = fork();
  if (worker == 0) {
    crash_during_reservation = true;
    durable::Engine engine(engine_options(url));
    register_order_processing(engine);
    engine.start();
    engine.start_workflow<PlaceOrder>(order.id, order);
    say("started workflow " + order.id);
    pause();  // killed from inside the activity
    _exit(1);
  }
  int status = 0;
  waitpid(worker, &status, 0);
  if (!WIFSIGNALED(status)) return 1;
  say(fmt::format("worker {} died from signal {}; starting a new engine", worker, WTERMSIG(status)));

  // [resume]
  durable::Engine engine(engine_options(url));
  register_order_processing(engine);
  engine.start();
  auto run = engine.workflow<PlaceOrder>(order.id);  // the same run, found by its id
  nlohmann::json result = run.result(60s);
  // [resume]
  say(fmt::format("workflow {} is {}: {}", order.id, durable::to_string(run.status()), result.dump()));
  engine.stop();
  durable::testing::drop_schema(url, "durable_example_orders");
  return result["reservation"] == "reservation-blue-widget" ? 0 : 1;
}
