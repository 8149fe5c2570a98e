// Subscription: a workflow that bills a customer every 30 days for as long as the subscription
// lasts, a loop with no end. Every 3 bills it continues as new, so each run's history stays
// short however long the customer stays. A price change is a message (one sent while a run
// ends goes to the next); the customer leaving is a cancel, which reaches whichever run is
// current, from a handle of the first. The months go by with the test clock.
//
// Run: build/examples/12-subscription   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <thread>

using namespace std::chrono_literals;

struct Account {
  std::string customer;
  int price = 0;
  int bills = 0;  // over the whole subscription, all runs together
  int billed = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Account, customer, price, bills, billed)

struct Charge {
  static constexpr auto name = "charge";
  int operator()(durable::ActivityContext&, const Account& a) const { return a.price; }
};

// [workflow]
struct Subscription {
  static constexpr auto name = "subscription";
  Account operator()(durable::WorkflowContext& ctx, Account account) {
    for (int month = 0; month < 3; ++month) {
      ctx.sleep(30 * 24h);
      if (auto price = ctx.receive<int>("price", 0ms)) account.price = *price;  // a change sent meanwhile
      account.billed += ctx.call<Charge>(account);
      ctx.set_event("bills", ++account.bills);
    }
    ctx.continue_as_new(account);  // the next run starts from here, with an empty history
  }
};
// [workflow]

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_subscription";
  durable::testing::drop_schema(url, schema);
  durable::Engine engine({.database_url = url, .schema = schema, .poll_interval = 100ms});
  engine.add<Subscription>().add<Charge>();
  engine.start();

  auto first = engine.start_workflow<Subscription>("subscription-ana", {"ana", 10});
  durable::Runs runs = engine.runs();
  auto bills = [&] { return first.get_event<int>("bills").value_or(0); };  // follows the chain
  auto sleeping = [&] {                                                    // the current run waits in its 30-day sleep
    const auto history = runs.history(runs.latest("subscription-ana").run_id);
    return !history.events.empty() && history.events.back().kind == "timer_started";
  };
  for (int month = 1; month <= 7; ++month) {
    if (month == 5) engine.send("subscription-ana", "price", 12);
    while (!sleeping()) std::this_thread::sleep_for(20ms);
    durable::testing::advance_clock(url, schema, 31 * 24h);  // a month goes by
    while (bills() < month) std::this_thread::sleep_for(20ms);
  }
  fmt::print("billed 7 months\n");

  // [chain]
  // Every run of the subscription so far, from the first: each names the run that continued it.
  int continued = 0;
  for (durable::RunInfo run = runs.get(first.run_id());; run = runs.get(run.continued_as_run)) {
    fmt::print("run {} ({}): started at bill {}, {}\n", run.run_id, to_string(run.started_by),
               run.input.at("bills").get<int>(), to_string(run.status));
    if (run.continued_as_run.empty()) break;
    ++continued;
  }
  // [chain]

  // The customer leaves: asked through the first run's handle, the current run is cancelled.
  first.cancel("the customer cancelled");
  bool cancelled = false;
  try {
    first.result(30s);
  } catch (const durable::WorkflowCancelled& e) {
    cancelled = true;
    fmt::print("subscription ended: {}\n", e.reason());
  }
  const durable::RunInfo last = runs.latest("subscription-ana");
  const int billed = last.input.at("billed").get<int>();
  fmt::print("{} runs, {} billed before the last run\n", continued + 1, billed);
  engine.stop();
  durable::testing::drop_schema(url, schema);
  // Bills 1-4 at 10, 5-6 at 12 went in the runs that continued (3 per run): 30 + 10 + 24 = 64.
  return cancelled && continued == 2 && billed == 64 ? 0 : 1;
}
