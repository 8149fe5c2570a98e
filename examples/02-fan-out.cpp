// Fan-out: activities started in parallel and awaited, failures caught per item, journaled
// ids and time, workflows and activities written as plain lambdas, status and cancel.
//
// Run: build/examples/02-fan-out   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <thread>

using namespace std::chrono_literals;

// [refs]
// Typed names for callables: calls through them are checked at compile time.
const durable::ActivityRef<std::string, int> fetch_price{"fetch_price"};
const durable::WorkflowRef<std::vector<std::string>, nlohmann::json> quote{"quote"};
const durable::WorkflowRef<std::string, std::string> reminder{"reminder"};
// [refs]

int main() {
  durable::testing::drop_schema(durable::testing::database_url(), "durable_example_fan_out");
  durable::Engine engine({.database_url = durable::testing::database_url(), .schema = "durable_example_fan_out"});

  // [register]
  engine.add_activity(fetch_price,
                      [](durable::ActivityContext&, const std::string& sku) -> int {
                        if (sku == "discontinued") throw std::invalid_argument("no price for " + sku);
                        return static_cast<int>(sku.size()) * 100;
                      },
                      {.retry = durable::RetryPolicy{.max_attempts = 2}});

  engine.add_workflow(quote, [](durable::WorkflowContext& ctx, const std::vector<std::string>& skus) {
    std::vector<durable::Future<int>> prices;
    for (const auto& sku : skus) prices.push_back(ctx.start(fetch_price, sku));  // all run at once
    int total = 0;
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < skus.size(); ++i) {
      try {
        total += prices[i].get();
      } catch (const durable::ActivityFailed& e) {  // one item failing does not fail the quote
        missing.push_back(skus[i] + " (" + e.error_message() + ")");
      }
    }
    auto at = std::chrono::duration_cast<std::chrono::seconds>(ctx.now().time_since_epoch()).count();
    return nlohmann::json{{"quote_id", ctx.uuid()}, {"at", at}, {"total", total}, {"missing", missing}};
  });

  engine.add_workflow(reminder, [](durable::WorkflowContext& ctx, const std::string& who) {
    ctx.sleep(24h);
    return "reminded " + who;
  });
  // [register]
  engine.start();

  // [run]
  auto q = engine.start_workflow(quote, "quote-1", {"pen", "notebook", "discontinued"});
  nlohmann::json result = q.result(30s);
  fmt::print("quote {}: total {} cents, missing {}\n", result["quote_id"].get<std::string>(),
             result["total"].get<int>(), result["missing"].dump());

  auto r = engine.start_workflow(reminder, "remind-ada", "ada");
  std::this_thread::sleep_for(200ms);
  fmt::print("reminder is {}\n", durable::to_string(r.status()));  // running: sleeping for a day
  r.cancel("ada has been reminded already");                       // its code sees WorkflowCancelled in its sleep
  try {
    r.result(30s);
  } catch (const durable::WorkflowCancelled& e) {
    fmt::print("reminder: {}\n", e.what());
  }
  const durable::WorkflowStatus status = r.status();
  fmt::print("reminder is {}\n", durable::to_string(status));  // cancelled
  // [run]

  engine.stop();
  durable::testing::drop_schema(durable::testing::database_url(), "durable_example_fan_out");
  return result["total"] == 1100 && status == durable::WorkflowStatus::cancelled ? 0 : 1;
}
