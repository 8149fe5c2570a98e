#include "pg/records.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "durable/errors.hpp"
#include "durable/queue_records.hpp"

namespace durable::pg {

namespace {

// Keys are arbitrary bytes; JSON and jsonb carry them as hex, the tasks table as bytea.
std::string from_hex(const std::string& hex) {
  auto nibble = [](char c) { return static_cast<unsigned char>(c <= '9' ? c - '0' : c - 'a' + 10); };
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1]));
  }
  return out;
}

}  // namespace

std::string hex_of(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

// Only what differs from the stored defaults is kept (each step writes its options twice: in the
// task row and in the scheduled event). Rows written whole by earlier versions read the same.
Json options_to_json(const detail::ResolvedActivityOptions& o) {
  Json j = Json::object();
  if (o.timeout.count() != stored_default_timeout_ms) j["timeout_ms"] = o.timeout.count();
  if (o.retry.max_retry_horizon.count() != stored_default_retry_horizon_ms)
    j["max_retry_horizon_ms"] = o.retry.max_retry_horizon.count();
  if (o.idempotency_key) j["idempotency_key_hex"] = hex_of(*o.idempotency_key);
  if (o.retry.max_attempts != stored_default_max_attempts) j["max_attempts"] = o.retry.max_attempts;
  if (o.retry.backoff != Backoff::constant) j["backoff"] = "exponential";
  if (o.retry.base.count() != stored_default_base_ms) j["base_ms"] = o.retry.base.count();
  if (o.retry.max_backoff.count() != stored_default_max_backoff_ms) j["max_backoff_ms"] = o.retry.max_backoff.count();
  if (o.retry.jitter != stored_default_jitter) j["jitter"] = o.retry.jitter;
  if (!o.retry.non_retryable_errors.empty()) j["non_retryable_errors"] = o.retry.non_retryable_errors;
  if (o.queue != default_queue) j["queue"] = o.queue;
  if (o.priority != 0) j["priority"] = o.priority;
  if (o.concurrency_key) j["concurrency_key"] = *o.concurrency_key;
  return j;
}

detail::ResolvedActivityOptions options_from_json(const Json& j) {
  detail::ResolvedActivityOptions o;
  o.retry.max_attempts = j.value("max_attempts", stored_default_max_attempts);
  o.retry.backoff =
      j.value("backoff", std::string("constant")) == "exponential" ? Backoff::exponential : Backoff::constant;
  o.retry.base = Duration{j.value("base_ms", stored_default_base_ms)};
  o.retry.max_backoff = Duration{j.value("max_backoff_ms", stored_default_max_backoff_ms)};
  o.retry.max_retry_horizon = Duration{j.value("max_retry_horizon_ms", stored_default_retry_horizon_ms)};
  o.retry.jitter = j.value("jitter", stored_default_jitter);
  o.retry.non_retryable_errors = j.value("non_retryable_errors", std::vector<std::string>{});
  o.timeout = Duration{j.value("timeout_ms", stored_default_timeout_ms)};
  o.queue = j.value("queue", std::string(default_queue));
  o.priority = j.value("priority", 0);
  if (j.contains("concurrency_key")) o.concurrency_key = j.at("concurrency_key").get<std::string>();
  if (j.contains("idempotency_key_hex") && j["idempotency_key_hex"].is_string()) {
    o.idempotency_key = from_hex(j["idempotency_key_hex"].get<std::string>());
  }
  return o;
}

}  // namespace durable::pg
