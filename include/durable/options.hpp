// Per-activity options: retry policy and per-attempt timeout, each with its default on the field.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace durable {

using Duration = std::chrono::milliseconds;

// The longest durable timer (sleep, start_timer, a receive's timeout) and the longest a handle's
// result() or get_event() waits: longer is InvalidOptions, as any other call the engine cannot
// honour. 100 years keeps every deadline inside the clock's range (system_clock's nanoseconds end
// in 2262) and far from overflow; an unbounded wait is receive() without a timeout.
inline constexpr Duration max_timer_duration = std::chrono::duration_cast<Duration>(std::chrono::years{100});

enum class Backoff {
  constant,     // every delay is `base`
  exponential,  // delay after attempt n fails is base * 2^(n-1), capped by max_backoff
};

struct RetryPolicy {
  int max_attempts = 1;  // > 0; the default is a single attempt (no retry)
  Backoff backoff = Backoff::constant;
  Duration base{0};                                     // >= 0
  Duration max_backoff = std::chrono::seconds{60};      // >= 0; caps every delay
  Duration max_retry_horizon = std::chrono::hours{24};  // must cover every attempt at its timeout plus every delay
  double jitter = 0.0;                                  // 0..1: each delay is drawn from [d, d * (1 + jitter)]; 0 = off
  // Error types (as journaled, e.g. "std::invalid_argument") that end the attempts at once.
  // durable::NonRetryableError and types derived from it always do.
  std::vector<std::string> non_retryable_errors{};

  // Delay before the attempt after `failed_attempt` (1-based), before jitter. Never overflows.
  Duration delay_after(int failed_attempt) const;
  // The largest delay jitter can make of `delay`.
  Duration with_max_jitter(Duration delay) const;
};

struct ActivityOptions {
  std::optional<RetryPolicy> retry{};  // default: RetryPolicy{} (one attempt)
  std::optional<Duration> timeout{};   // per attempt, > 0 and <= 24h; default 30s
  // Any bytes (NUL included), 1 to max_idempotency_key_bytes long. Once a result is committed
  // for (activity, key), later calls with the same key get it without running the body.
  // Default: the activity's own `static std::optional<std::string> idempotency_key(const In&)`, else none.
  std::optional<std::string> idempotency_key{};
  // The named queue its attempts wait on (durable/queues.hpp), under that queue's limits; only
  // engines that serve the queue run them. Default: the default queue, which has no limits.
  std::optional<std::string> queue{};
  // On a named queue, higher goes first (then keys' turns, then the oldest); the default queue
  // ignores it. Default 0.
  std::optional<int> priority{};
  // On a named queue, the key its per-key limits and turns count it under (UTF-8, at most
  // max_concurrency_key_bytes). Default: its run's StartOptions::concurrency_key.
  std::optional<std::string> concurrency_key{};
};

inline constexpr std::size_t max_idempotency_key_bytes = 512;

inline constexpr Duration default_activity_timeout = std::chrono::seconds{30};
inline constexpr Duration max_activity_timeout = std::chrono::hours{24};

}  // namespace durable
