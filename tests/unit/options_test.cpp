#include <catch2/catch.hpp>

#include <durable/durable.hpp>
#include "support/expect.hpp"

#include "base/resolved_options.hpp"

using namespace durable;
using durable::detail::resolve;
using durable::detail::ResolvedActivityOptions;
using durable::detail::validate;
using durable::test::expect_throw;
using namespace std::chrono_literals;

TEST_CASE("constant backoff waits base between every attempt", "[unit][retry]") {
  RetryPolicy p{.max_attempts = 5, .backoff = Backoff::constant, .base = 250ms};
  for (int n = 1; n <= 4; ++n) CHECK(p.delay_after(n) == 250ms);
}

TEST_CASE("exponential backoff doubles from base and is capped by max_backoff", "[unit][retry]") {
  RetryPolicy p{.max_attempts = 10, .backoff = Backoff::exponential, .base = 100ms, .max_backoff = 1s};
  CHECK(p.delay_after(1) == 100ms);
  CHECK(p.delay_after(2) == 200ms);
  CHECK(p.delay_after(3) == 400ms);
  CHECK(p.delay_after(4) == 800ms);
  CHECK(p.delay_after(5) == 1s);
  CHECK(p.delay_after(1000000) == 1s);  // no overflow for large attempt numbers
}

TEST_CASE("options resolve call site first, then the activity's own, then the defaults", "[unit][options]") {
  ActivityOptions declared{.retry = RetryPolicy{.max_attempts = 3}, .timeout = 10s};
  auto only_declared = resolve({}, declared);
  CHECK(only_declared.retry.max_attempts == 3);
  CHECK(only_declared.timeout == 10s);
  auto call_site = resolve({.timeout = 2s}, declared);
  CHECK(call_site.retry.max_attempts == 3);  // the retry policy still comes from the activity
  CHECK(call_site.timeout == 2s);
  auto defaults = resolve({}, {});
  CHECK(defaults.retry.max_attempts == 1);
  CHECK(defaults.timeout == 30s);
  CHECK(defaults.queue == "default");
  CHECK(defaults.priority == 0);
  CHECK(!defaults.concurrency_key);
  auto queued = resolve({.priority = 7, .concurrency_key = "acme"}, {.queue = "api", .priority = 1});
  CHECK(queued.queue == "api");  // declared, and the call's priority and key win
  CHECK(queued.priority == 7);
  CHECK(queued.concurrency_key == "acme");
}

TEST_CASE("invalid options name the field, the value and the rule", "[unit][options]") {
  auto check_invalid = [](ResolvedActivityOptions o, const std::string& expected) {
    expect_throw<InvalidOptions>([&] { validate(o, "charge"); }, expected);
  };
  ResolvedActivityOptions o;
  o.retry.max_attempts = 0;
  check_invalid(o, "activity 'charge': retry.max_attempts = 0 is invalid: it must be > 0");
  o = {};
  o.retry.base = -1ms;
  check_invalid(o, "retry.base = -1ms");
  o = {};
  o.timeout = 0ms;
  check_invalid(o, "timeout = 0ms is invalid: it must be > 0 and <= 24h");
  o = {};
  o.timeout = 25h;
  check_invalid(o, "timeout = 90000000ms");
  o = {};
  o.retry.max_attempts = 10;
  o.timeout = 3h;  // 10 attempts of 3 h each cannot fit the 24 h horizon
  check_invalid(o, "retry.max_retry_horizon = 86400000ms is invalid");
  o = {};
  o.queue = "no spaces";
  check_invalid(o, "activity 'charge': queue = 'no spaces' is invalid: a queue name is 1 to 63 characters");
  o = {};
  o.queue = "api";
  o.concurrency_key = "\xff\xfe";
  check_invalid(o, "concurrency_key = '\\xff\\xfe' is invalid: it is not valid UTF-8");
  o.concurrency_key = std::string(256, 'k');
  check_invalid(o, "it is 256 bytes long: the limit is 255 bytes");
  o = {};
  o.concurrency_key = "acme";
  check_invalid(o, "a key applies on a named queue only: set ActivityOptions::queue too");
  o = {};
  CHECK_NOTHROW(validate(o, "charge"));
}

TEST_CASE("max_backoff caps a constant delay too", "[unit][retry]") {
  RetryPolicy p{.max_attempts = 3, .backoff = Backoff::constant, .base = 10min, .max_backoff = 60s};
  CHECK(p.delay_after(1) == 60s);
}

TEST_CASE("the horizon check counts the largest jittered delay", "[unit][retry]") {
  ResolvedActivityOptions o;
  o.timeout = 10s;
  o.retry = RetryPolicy{.max_attempts = 2, .base = 40s, .max_retry_horizon = 55s, .jitter = 0.0};
  CHECK_THROWS_AS(validate(o, "a"), InvalidOptions);  // 10 + 40 + 10 = 60 s > 55 s
  o.retry.max_retry_horizon = 60s;
  CHECK_NOTHROW(validate(o, "a"));
  o.retry.jitter = 0.5;  // 10 + 60 + 10 = 80 s
  CHECK_THROWS_AS(validate(o, "a"), InvalidOptions);
}
