#include "journal/events.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <type_traits>
#include <utility>

#include "durable/errors.hpp"

namespace durable::journal {

namespace {

template <typename E, std::size_t N>
using Texts = std::array<std::pair<E, std::string_view>, N>;

constexpr Texts<EventKind, 25> event_kinds{{
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
    {EventKind::receive_started, "receive_started"},
    {EventKind::message_received, "message_received"},
    {EventKind::receive_timed_out, "receive_timed_out"},
    {EventKind::event_set, "event_set"},
    {EventKind::wait_chosen, "wait_chosen"},
    {EventKind::child_started, "child_started"},
    {EventKind::child_start_failed, "child_start_failed"},
    {EventKind::child_completed, "child_completed"},
    {EventKind::child_failed, "child_failed"},
    {EventKind::cancel_requested, "cancel_requested"},
    {EventKind::cancel_delivered, "cancel_delivered"},
    {EventKind::workflow_continued, "workflow_continued"},
    {EventKind::patched, "patched"},
    {EventKind::call_refused, "call_refused"},
}};
static_assert(event_kinds.size() == std::variant_size_v<EventData>, "one data struct per event kind");
constexpr Texts<RunStatus, 5> run_statuses{{
    {RunStatus::running, "running"},
    {RunStatus::completed, "completed"},
    {RunStatus::failed, "failed"},
    {RunStatus::cancelled, "cancelled"},
    {RunStatus::continued, "continued"},
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

constexpr bool required = true;
constexpr bool defaulted = false;

// The fields of each kind's data, in one table: visit(key, member, required) for each. A
// required field must be present; a defaulted one keeps the struct's initial value when absent;
// a std::optional one is absent when empty.
template <typename E, typename Visit>
void describe(E& e, Visit&& visit) {
  using T = std::remove_const_t<E>;
  if constexpr (std::is_same_v<T, WorkflowStarted>) {
    visit("input", e.input, required);
    visit("schedule", e.schedule, defaulted);
    visit("depth", e.depth, defaulted);
    visit("parent", e.parent, defaulted);
    visit("continued_from", e.continued_from, defaulted);
  } else if constexpr (std::is_same_v<T, ActivityScheduled>) {
    visit("input", e.input, defaulted);
    visit("options", e.options, defaulted);
  } else if constexpr (std::is_same_v<T, ActivityCompleted>) {
    visit("result", e.result, required);
    visit("attempts", e.attempts, defaulted);
    visit("started_us", e.started_us, defaulted);
  } else if constexpr (std::is_same_v<T, ActivityFailed> || std::is_same_v<T, WorkflowFailed>) {
    visit("error_type", e.error_type, defaulted);
    visit("error_message", e.error_message, defaulted);
    if constexpr (std::is_same_v<T, ActivityFailed>) visit("attempts", e.attempts, defaulted);
  } else if constexpr (std::is_same_v<T, TimerStarted>) {
    visit("fire_at_us", e.fire_at_us, required);
    visit("duration_ms", e.duration_ms, defaulted);
  } else if constexpr (std::is_same_v<T, SideEffect> || std::is_same_v<T, EventSet>) {
    visit("value", e.value, required);
  } else if constexpr (std::is_same_v<T, WorkflowCompleted> || std::is_same_v<T, ChildCompleted>) {
    visit("result", e.result, required);
  } else if constexpr (std::is_same_v<T, WorkflowCancelled>) {
    visit("error_type", e.error_type, defaulted);
    visit("error_message", e.error_message, defaulted);
    visit("terminated", e.terminated, defaulted);
  } else if constexpr (std::is_same_v<T, WorkflowResumed>) {
    visit("retry_steps", e.retry_steps, defaulted);
    visit("actor", e.actor, defaulted);
    visit("reason", e.reason, defaulted);
  } else if constexpr (std::is_same_v<T, ReceiveStarted>) {
    visit("fire_at_us", e.fire_at_us, required);
    visit("timeout_ms", e.timeout_ms, defaulted);
  } else if constexpr (std::is_same_v<T, MessageReceived>) {
    visit("message_id", e.message_id, defaulted);
    visit("seq", e.seq, defaulted);
    visit("payload", e.payload, required);
  } else if constexpr (std::is_same_v<T, WaitChosen>) {
    visit("index", e.index, required);
  } else if constexpr (std::is_same_v<T, ChildStarted>) {
    visit("workflow_id", e.workflow_id, required);
    visit("run_id", e.run_id, defaulted);
    visit("parent_close", e.parent_close, defaulted);
    visit("input", e.input, defaulted);
  } else if constexpr (std::is_same_v<T, ChildStartFailed>) {
    visit("workflow_id", e.workflow_id, required);
    visit("run_id", e.run_id, defaulted);
    visit("status", e.status, defaulted);
  } else if constexpr (std::is_same_v<T, ChildFailed>) {
    visit("status", e.status, defaulted);
    visit("error_type", e.error_type, defaulted);
    visit("error_message", e.error_message, defaulted);
  } else if constexpr (std::is_same_v<T, CancelRequested>) {
    visit("reason", e.reason, defaulted);
  } else if constexpr (std::is_same_v<T, CancelDelivered>) {
    visit("at_step", e.at_step, required);
    visit("awaited", e.awaited, required);
    visit("dropped", e.dropped, defaulted);
  } else if constexpr (std::is_same_v<T, WorkflowContinued>) {
    visit("input", e.input, defaulted);
    visit("run_id", e.run_id, defaulted);
  } else if constexpr (std::is_same_v<T, CallRefused>) {
    visit("call", e.call, required);
    visit("error_type", e.error_type, defaulted);
    visit("error_message", e.error_message, defaulted);
    visit("workflow_id", e.workflow_id, defaulted);
  } else {
    static_assert(std::is_same_v<T, TimerFired> || std::is_same_v<T, ReceiveTimedOut> || std::is_same_v<T, Patched>,
                  "every kind's fields are described here");
  }
}

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A value as an error message shows it: cut short, since a wrong field may hold a whole payload.
std::string shown(const Json& j) {
  std::string text = j.dump();
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return text;
}

// One field's JSON read into its member; integers checked (a float or an out-of-range number is
// an error here, not undefined behaviour in a conversion).
template <typename T>
void read_value(const Json& j, T& out) {
  if constexpr (std::is_same_v<T, Json>) {
    out = j;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) throw std::invalid_argument("is not true or false");
    out = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!j.is_number_integer()) throw std::invalid_argument(fmt::format("is {}, not an integer", shown(j)));
    if (j.is_number_unsigned() ? j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                               : j.get<std::int64_t>() < std::numeric_limits<T>::min() ||
                                     j.get<std::int64_t>() > std::numeric_limits<T>::max()) {
      throw std::invalid_argument(fmt::format("is {}, out of range for its type (from {} to {})", shown(j),
                                              std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    }
    out = static_cast<T>(j.get<std::int64_t>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) throw std::invalid_argument("is not a string");
    out = j.get<std::string>();
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type value{};
    read_value(j, value);
    out = std::move(value);
  } else {  // std::vector<int>
    if (!j.is_array()) throw std::invalid_argument("is not an array");
    out.clear();
    for (const Json& item : j) read_value(item, out.emplace_back());
  }
}

template <typename T>
T decode_as(const Json& data) {
  T e{};
  if (!data.is_object()) {
    throw Error(fmt::format("a {} event's data is not a JSON object", to_text(T::kind)));
  }
  describe(e, [&](const char* key, auto& member, bool must) {
    const auto it = data.find(key);
    if (it == data.end() || (it->is_null() && !std::is_same_v<std::decay_t<decltype(member)>, Json>)) {
      if (must) throw Error(fmt::format("a {} event's data lacks its field '{}'", to_text(T::kind), key));
      return;
    }
    try {
      read_value(*it, member);
    } catch (const std::exception& error) {
      throw Error(fmt::format("a {} event's field '{}' {}", to_text(T::kind), key, error.what()));
    }
  });
  return e;
}

template <typename T>
Json encode_as(const T& e) {
  Json data = Json::object();
  describe(e, [&](const char* key, const auto& member, bool) {
    if constexpr (is_optional<std::decay_t<decltype(member)>>::value) {
      if (member) data[key] = *member;
    } else {
      data[key] = member;
    }
  });
  return data;
}

// The alternative of EventData whose kind is `kind`, called with a value of its type.
template <typename Call, std::size_t... I>
auto with_type(EventKind kind, Call&& call, std::index_sequence<I...>) {
  using Result = decltype(call(std::variant_alternative_t<0, EventData>{}));
  std::optional<Result> out;
  (void)((std::variant_alternative_t<I, EventData>::kind == kind
              ? (out.emplace(call(std::variant_alternative_t<I, EventData>{})), true)
              : false) ||
         ...);
  if (!out) throw Error(fmt::format("event kind {} has no data type", static_cast<int>(kind)));
  return std::move(*out);
}

template <typename Call>
auto with_type(EventKind kind, Call&& call) {
  return with_type(kind, std::forward<Call>(call), std::make_index_sequence<std::variant_size_v<EventData>>{});
}

}  // namespace

std::string_view to_text(EventKind kind) { return text_of(event_kinds, kind); }
EventKind event_kind_from_text(std::string_view text) { return value_of(event_kinds, text, "journal event kind"); }
std::string_view to_text(RunStatus status) { return text_of(run_statuses, status); }
RunStatus run_status_from_text(std::string_view text) { return value_of(run_statuses, text, "run status"); }
std::string_view to_text(TaskStatus status) { return text_of(task_statuses, status); }
TaskStatus task_status_from_text(std::string_view text) { return value_of(task_statuses, text, "task status"); }

EventKind kind_of(const EventData& data) {
  return std::visit([](const auto& e) { return std::decay_t<decltype(e)>::kind; }, data);
}

Json encode(const EventData& data) {
  return std::visit([](const auto& e) { return encode_as(e); }, data);
}

EventData decode(EventKind kind, const Json& data) {
  return with_type(kind, [&](auto typed) -> EventData { return decode_as<decltype(typed)>(data); });
}

std::vector<std::string> unknown_fields(EventKind kind, const Json& data) {
  std::vector<std::string> unknown;
  if (!data.is_object()) return unknown;
  with_type(kind, [&](auto typed) {
    for (auto it = data.begin(); it != data.end(); ++it) {
      const std::string& key = it.key();  // not a structured binding: clang 14 cannot capture one
      bool known = false;
      describe(typed, [&](const char* k, auto&, bool) { known = known || key == k; });
      if (!known) unknown.push_back(key);
    }
    return 0;
  });
  return unknown;
}

}  // namespace durable::journal
