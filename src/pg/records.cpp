#include "pg/records.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "durable/errors.hpp"

namespace durable::pg {

namespace {

template <typename E, std::size_t N>
using Texts = std::array<std::pair<E, std::string_view>, N>;

constexpr Texts<EventKind, 11> event_kinds{{
    {EventKind::workflow_started, "workflow_started"},
    {EventKind::activity_scheduled, "activity_scheduled"},
    {EventKind::activity_completed, "activity_completed"},
    {EventKind::activity_failed, "activity_failed"},
    {EventKind::timer_started, "timer_started"},
    {EventKind::timer_fired, "timer_fired"},
    {EventKind::side_effect, "side_effect"},
    {EventKind::workflow_completed, "workflow_completed"},
    {EventKind::workflow_failed, "workflow_failed"},
    {EventKind::workflow_cancelled, "workflow_cancelled"},
    {EventKind::workflow_resumed, "workflow_resumed"},
}};
constexpr Texts<RunStatus, 4> run_statuses{{
    {RunStatus::running, "running"},
    {RunStatus::completed, "completed"},
    {RunStatus::failed, "failed"},
    {RunStatus::cancelled, "cancelled"},
}};
constexpr Texts<TaskStatus, 5> task_statuses{{
    {TaskStatus::pending, "pending"},
    {TaskStatus::running, "running"},
    {TaskStatus::completed, "completed"},
    {TaskStatus::failed, "failed"},
    {TaskStatus::cancelled, "cancelled"},
}};

template <typename E, std::size_t N>
std::string_view text_of(const Texts<E, N>& texts, E value) {
  for (const auto& [v, text] : texts) {
    if (v == value) return text;
  }
  return "?";
}

template <typename E, std::size_t N>
E value_of(const Texts<E, N>& texts, std::string_view text, const char* what) {
  for (const auto& [v, t] : texts) {
    if (t == text) return v;
  }
  // Only a schema written by a newer build (or by hand) holds one: say so rather than guess.
  throw Error(
      fmt::format("unknown {} '{}' in the database: was it written by a newer version of durable?", what, text));
}

}  // namespace

std::string_view to_text(EventKind kind) { return text_of(event_kinds, kind); }
EventKind event_kind_from_text(std::string_view text) { return value_of(event_kinds, text, "journal event kind"); }
std::string_view to_text(RunStatus status) { return text_of(run_statuses, status); }
RunStatus run_status_from_text(std::string_view text) { return value_of(run_statuses, text, "run status"); }
std::string_view to_text(TaskStatus status) { return text_of(task_statuses, status); }
TaskStatus task_status_from_text(std::string_view text) { return value_of(task_statuses, text, "task status"); }

namespace {

// Keys are arbitrary bytes; JSON and jsonb carry them as hex, the tasks table as bytea.
std::string to_hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}
std::string from_hex(const std::string& hex) {
  auto nibble = [](char c) { return static_cast<unsigned char>(c <= '9' ? c - '0' : c - 'a' + 10); };
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1]));
  }
  return out;
}

}  // namespace

Json options_to_json(const detail::ResolvedActivityOptions& o) {
  Json key = o.idempotency_key ? Json(to_hex(*o.idempotency_key)) : Json();
  return {{"idempotency_key_hex", key},
          {"max_attempts", o.retry.max_attempts},
          {"backoff", o.retry.backoff == Backoff::exponential ? "exponential" : "constant"},
          {"base_ms", o.retry.base.count()},
          {"max_backoff_ms", o.retry.max_backoff.count()},
          {"max_retry_horizon_ms", o.retry.max_retry_horizon.count()},
          {"jitter", o.retry.jitter},
          {"non_retryable_errors", o.retry.non_retryable_errors},
          {"timeout_ms", o.timeout.count()}};
}

detail::ResolvedActivityOptions options_from_json(const Json& j) {
  detail::ResolvedActivityOptions o;
  o.retry.max_attempts = j.at("max_attempts").get<int>();
  o.retry.backoff = j.at("backoff").get<std::string>() == "exponential" ? Backoff::exponential : Backoff::constant;
  o.retry.base = Duration{j.at("base_ms").get<std::int64_t>()};
  o.retry.max_backoff = Duration{j.at("max_backoff_ms").get<std::int64_t>()};
  o.retry.max_retry_horizon = Duration{j.at("max_retry_horizon_ms").get<std::int64_t>()};
  o.retry.jitter = j.value("jitter", 0.0);
  o.retry.non_retryable_errors = j.value("non_retryable_errors", std::vector<std::string>{});
  o.timeout = Duration{j.at("timeout_ms").get<std::int64_t>()};
  if (j.contains("idempotency_key_hex") && j["idempotency_key_hex"].is_string()) {
    o.idempotency_key = from_hex(j["idempotency_key_hex"].get<std::string>());
  }
  return o;
}

}  // namespace durable::pg
