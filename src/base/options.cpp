#include "base/resolved_options.hpp"

#include <fmt/format.h>

#include "base/checks.hpp"
#include "base/printable.hpp"
#include "durable/errors.hpp"

namespace durable {

using namespace std::chrono_literals;

Duration RetryPolicy::delay_after(int failed_attempt) const {
  if (backoff == Backoff::constant || failed_attempt <= 1) return std::min(base, max_backoff);
  // Doubling stops as soon as it reaches the cap, so large attempt numbers cannot overflow.
  Duration delay = base;
  for (int n = 1; n < failed_attempt && delay < max_backoff; ++n) {
    delay = delay > Duration::max() / 2 ? Duration::max() : delay * 2;
  }
  return std::min(delay, max_backoff);
}

Duration RetryPolicy::with_max_jitter(Duration delay) const {
  const double scaled = static_cast<double>(delay.count()) * (1.0 + jitter);
  if (scaled >= static_cast<double>(Duration::max().count())) return Duration::max();
  return Duration{static_cast<Duration::rep>(scaled)};
}

namespace detail {

ResolvedActivityOptions resolve(const ActivityOptions& call_site, const ActivityOptions& declared) {
  ResolvedActivityOptions out;
  if (call_site.retry) {
    out.retry = *call_site.retry;
  } else if (declared.retry) {
    out.retry = *declared.retry;
  }
  if (call_site.timeout) {
    out.timeout = *call_site.timeout;
  } else if (declared.timeout) {
    out.timeout = *declared.timeout;
  }
  out.idempotency_key = call_site.idempotency_key ? call_site.idempotency_key : declared.idempotency_key;
  if (auto queue = call_site.queue ? call_site.queue : declared.queue) out.queue = *queue;
  out.priority = call_site.priority.value_or(declared.priority.value_or(0));
  out.concurrency_key = call_site.concurrency_key ? call_site.concurrency_key : declared.concurrency_key;
  return out;
}

namespace {
[[noreturn]] void invalid(const std::string& activity, const std::string& field, const std::string& value,
                          const std::string& rule) {
  throw InvalidOptions(fmt::format("activity '{}': {} = {} is invalid: {}", activity, field, value, rule));
}
std::string ms(Duration d) { return fmt::format("{}ms", d.count()); }
}  // namespace

void validate(const ResolvedActivityOptions& o, const std::string& activity) {
  const RetryPolicy& r = o.retry;
  if (r.max_attempts <= 0) invalid(activity, "retry.max_attempts", std::to_string(r.max_attempts), "it must be > 0");
  if (r.base < 0ms) invalid(activity, "retry.base", ms(r.base), "it must be >= 0");
  if (r.max_backoff < 0ms) invalid(activity, "retry.max_backoff", ms(r.max_backoff), "it must be >= 0");
  if (!(r.jitter >= 0.0 && r.jitter <= 1.0)) {
    invalid(activity, "retry.jitter", fmt::format("{}", r.jitter), "it must be between 0 and 1");
  }
  if (r.backoff != Backoff::constant && r.backoff != Backoff::exponential) {
    invalid(activity, "retry.backoff", std::to_string(static_cast<int>(r.backoff)),
            "it must be constant or exponential");
  }
  if (o.idempotency_key && o.idempotency_key->empty()) {
    throw InvalidIdempotencyKey(
        fmt::format("activity '{}': the idempotency key is empty: pass none, or a stable "
                    "non-empty key such as \"charge:<order id>\"",
                    activity));
  }
  if (o.idempotency_key && o.idempotency_key->size() > max_idempotency_key_bytes) {
    throw InvalidIdempotencyKey(
        fmt::format("activity '{}': the idempotency key is {} bytes; the limit is {} bytes "
                    "(hash longer keys)",
                    activity, o.idempotency_key->size(), max_idempotency_key_bytes));
  }
  if (!valid_queue_name(o.queue)) {
    invalid(activity, "queue", fmt::format("'{}'", printable(o.queue, 60)),
            "a queue name is 1 to 63 characters of [A-Za-z0-9_.:-]");
  }
  if (o.concurrency_key) {
    if (auto problem = text_problem(*o.concurrency_key, max_concurrency_key_bytes); !problem.empty()) {
      invalid(activity, "concurrency_key", fmt::format("'{}'", printable(*o.concurrency_key, 60)), "it " + problem);
    }
    if (o.queue == default_queue) {
      invalid(activity, "concurrency_key", fmt::format("'{}'", printable(*o.concurrency_key, 60)),
              "a key applies on a named queue only: set ActivityOptions::queue too");
    }
  }
  if (o.timeout <= 0ms || o.timeout > max_activity_timeout) {
    invalid(activity, "timeout", ms(o.timeout), "it must be > 0 and <= 24h");
  }
  // Worst case: every attempt runs to its timeout, with the largest delay between each.
  Duration worst = 0ms;
  for (int n = 1; n <= r.max_attempts && worst <= r.max_retry_horizon; ++n) {
    worst += o.timeout;
    if (n < r.max_attempts) {
      const Duration delay = r.with_max_jitter(r.delay_after(n));
      worst = delay > r.max_retry_horizon ? delay : worst + delay;  // no overflow: the loop stops past the horizon
    }
  }
  if (worst > r.max_retry_horizon) {
    invalid(activity, "retry.max_retry_horizon", ms(r.max_retry_horizon),
            fmt::format("it must cover the worst case of {} attempts at timeout {} plus their delays, "
                        "jitter included (more than {}); raise it or lower max_attempts, timeout or backoff",
                        r.max_attempts, ms(o.timeout), ms(worst)));
  }
}

}  // namespace detail

}  // namespace durable
