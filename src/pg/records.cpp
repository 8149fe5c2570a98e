#include "pg/records.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "durable/errors.hpp"

namespace durable::pg {

namespace {

template <typename E, std::size_t N>
using Texts = std::array<std::pair<E, std::string_view>, N>;

constexpr Texts<EventKind, 10> event_kinds{{
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

}  // namespace durable::pg
