// Retries, timeouts and heartbeats: a flaky payment gateway recovers under an exponential
// policy, and a long import heartbeats its progress so a retry resumes where it stopped.
//
// Run: build/examples/03-retries   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <atomic>
#include <thread>

using namespace std::chrono_literals;

static std::atomic<int> gateway_calls{0};

// [flaky]
struct CallGateway {
  static constexpr auto name = "call_gateway";
  static durable::ActivityOptions options() {
    return {.retry = durable::RetryPolicy{.max_attempts = 6,
                                          .backoff = durable::Backoff::exponential,
                                          .base = 100ms,      // 100, 200, 400, 800 ms ...
                                          .max_backoff = 2s,  // ... never more than 2 s
                                          .jitter = 0.2,      // spread by up to 20 %
                                          .non_retryable_errors = {"std::invalid_argument"}},
            .timeout = 5s};
  }
  std::string operator()(durable::ActivityContext& ctx, const std::string& payment) const {
    fmt::print("  gateway attempt {} for {}\n", ctx.attempt(), payment);
    if (++gateway_calls < 4) throw std::runtime_error("gateway unavailable (503)");  // recovers on attempt 4
    return "auth-" + payment;
  }
};
// [flaky]

// [heartbeat]
struct ImportRows {
  static constexpr auto name = "import_rows";
  static durable::ActivityOptions options() {
    return {.retry = durable::RetryPolicy{.max_attempts = 3}, .timeout = 2s};  // 2 s between heartbeats
  }
  int operator()(durable::ActivityContext& ctx, const int& rows) const {
    // Resume after the last row an earlier attempt reported.
    int next = ctx.last_heartbeat().is_null() ? 0 : ctx.last_heartbeat()["next_row"].get<int>();
    fmt::print("  import attempt {} starts at row {}\n", ctx.attempt(), next);
    for (; next < rows; ++next) {
      if (next == 5 && ctx.attempt() == 1) throw std::runtime_error("connection reset at row 5");
      std::this_thread::sleep_for(10ms);                        // one row of work
      if (!ctx.heartbeat({{"next_row", next + 1}})) return -1;  // cancelled or lost: stop quietly
    }
    return rows;
  }
};
// [heartbeat]

struct Checkout {
  static constexpr auto name = "checkout";
  nlohmann::json operator()(durable::WorkflowContext& ctx, const std::string& payment) {
    std::string auth = ctx.call<CallGateway>(payment);
    int imported = ctx.call<ImportRows>(10);
    return {{"auth", auth}, {"imported", imported}};
  }
};

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, "durable_example_retries");
  durable::Engine engine({.database_url = url, .schema = "durable_example_retries"});
  engine.add<CallGateway>().add<ImportRows>().add<Checkout>();
  engine.start();
  nlohmann::json result = engine.start_workflow<Checkout>("checkout-7", "pay-7").result(60s);
  fmt::print("checkout-7: {}\n", result.dump());
  engine.stop();
  durable::testing::drop_schema(url, "durable_example_retries");
  return result["auth"] == "auth-pay-7" && result["imported"] == 10 ? 0 : 1;
}
