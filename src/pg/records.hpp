// Typed records between replay and storage: the kinds of journal events and the statuses of
// runs and tasks, each with its one text form (what the tables store), and the new events and
// tasks a replay commits. JSON is left for user payloads and event data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "durable/detail/payload.hpp"
#include "resolved_options.hpp"

namespace durable::pg {

enum class EventKind {
  workflow_started,
  activity_scheduled,
  activity_completed,
  activity_failed,
  timer_started,
  timer_fired,
  side_effect,
  workflow_completed,
  workflow_failed,
  workflow_cancelled,
};
std::string_view to_text(EventKind kind);
EventKind event_kind_from_text(std::string_view text);  // throws durable::Error for an unknown kind

// A workflow run's status (workflows.status, runs.status).
enum class RunStatus { running, completed, failed, cancelled };
std::string_view to_text(RunStatus status);
RunStatus run_status_from_text(std::string_view text);

// An activity task's status (tasks.status).
enum class TaskStatus { pending, running, completed, failed, cancelled };
std::string_view to_text(TaskStatus status);
TaskStatus task_status_from_text(std::string_view text);

// An event a replay appends to the journal (its seq is given at commit).
struct NewEvent {
  EventKind kind;
  int step = -1;     // the code's call it records; -1 for the run's own events
  std::string name;  // activity name, "now" / "uuid" for side effects, empty otherwise
  Json data = Json::object();
};

// An activity task a replay schedules. `claim`: lease it at once to the committing engine.
struct NewTask {
  int step = 0;
  std::string name;
  Json input;
  detail::ResolvedActivityOptions options;
  bool claim = false;
};

}  // namespace durable::pg
