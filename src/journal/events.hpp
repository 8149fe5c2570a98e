// The journal's vocabulary: each kind of event, its data as one C++ struct, and the one JSON form
// of that data (what journal.data holds), defined once here for every writer and reader. The
// statuses of runs and tasks, with their text forms, are here too. Below storage and replay: it
// sees only JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "durable/detail/payload.hpp"

namespace durable::journal {

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
  workflow_resumed,
  receive_started,
  message_received,
  receive_timed_out,
  event_set,
  wait_chosen,
  child_started,
  child_start_failed,
  child_completed,
  child_failed,
  cancel_requested,
  cancel_delivered,
  workflow_continued,
  patched,
  call_refused,
};
std::string_view to_text(EventKind kind);
EventKind event_kind_from_text(std::string_view text);  // throws durable::Error for an unknown kind

// A workflow run's status (workflows.status). `continued`: ended by continue_as_new.
enum class RunStatus { running, completed, failed, cancelled, continued };
std::string_view to_text(RunStatus status);
RunStatus run_status_from_text(std::string_view text);

// An activity task's status (tasks.status).
enum class TaskStatus { pending, running, completed, failed, cancelled };
std::string_view to_text(TaskStatus status);
TaskStatus task_status_from_text(std::string_view text);

// The data of each kind. An event's step and name are columns of their own (the name: an
// activity's, a topic, a key, a child workflow's, a change id, "now" / "uuid" of a side effect).
// std::optional fields are left out of the JSON when empty; the others are always written, and
// read with the default below when an older journal lacks them.

// The run's first event (seq 0), written by the start (start_workflow.sql, continue_run.sql, a
// parent's commit_replay.sql for a child).
struct WorkflowStarted {
  static constexpr EventKind kind = EventKind::workflow_started;
  Json input;
  std::optional<Json> schedule;               // a scheduled start: the schedule's id and fire times
  std::optional<int> depth;                   // a child's: how deep below its root
  std::optional<Json> parent;                 // a child's: {workflow_id, run_id, step}
  std::optional<std::string> continued_from;  // the run it continues as new
};
struct ActivityScheduled {
  static constexpr EventKind kind = EventKind::activity_scheduled;
  Json input;
  std::optional<Json> options;  // only what differs from the stored defaults (pg::options_to_json)
};
// complete_steps.sql writes the two outcomes.
struct ActivityCompleted {
  static constexpr EventKind kind = EventKind::activity_completed;
  Json result;
  int attempts = 1;
  std::optional<std::int64_t> started_us;  // when the attempt that succeeded started
};
struct ActivityFailed {
  static constexpr EventKind kind = EventKind::activity_failed;
  std::string error_type, error_message;
  int attempts = 1;
};
struct TimerStarted {
  static constexpr EventKind kind = EventKind::timer_started;
  std::int64_t fire_at_us = 0;
  std::optional<std::int64_t> duration_ms;
};
struct TimerFired {
  static constexpr EventKind kind = EventKind::timer_fired;
};
struct SideEffect {
  static constexpr EventKind kind = EventKind::side_effect;
  Json value;
};
struct WorkflowCompleted {
  static constexpr EventKind kind = EventKind::workflow_completed;
  Json result;
};
struct WorkflowFailed {
  static constexpr EventKind kind = EventKind::workflow_failed;
  std::string error_type, error_message;
};
// Written by the run's own code (the cancel it was told), or by an operator's terminate
// (cancel_runs.sql: terminated, the code not told).
struct WorkflowCancelled {
  static constexpr EventKind kind = EventKind::workflow_cancelled;
  std::optional<std::string> error_type, error_message;
  std::optional<bool> terminated;
};
// An operator resumed the failed run (Runs::resume): these steps run again.
struct WorkflowResumed {
  static constexpr EventKind kind = EventKind::workflow_resumed;
  std::vector<int> retry_steps;
  std::optional<std::string> actor, reason;
};
// receive(topic) waits from here; a receive that finds a message or has no time to wait
// journals only the outcome (message_received or receive_timed_out), which then opens its step.
struct ReceiveStarted {
  static constexpr EventKind kind = EventKind::receive_started;
  std::int64_t fire_at_us = -1;  // its deadline; -1: none
  std::optional<std::int64_t> timeout_ms;
};
struct MessageReceived {
  static constexpr EventKind kind = EventKind::message_received;
  std::string message_id;
  int seq = 0;  // in the inbox
  Json payload;
};
struct ReceiveTimedOut {
  static constexpr EventKind kind = EventKind::receive_timed_out;
};
struct EventSet {
  static constexpr EventKind kind = EventKind::event_set;
  Json value;
};
struct WaitChosen {
  static constexpr EventKind kind = EventKind::wait_chosen;
  int index = 0;  // of the steps waited on (the event's name lists them)
};
struct ChildStarted {
  static constexpr EventKind kind = EventKind::child_started;
  std::string workflow_id, run_id, parent_close;
  Json input;
};
// The child's id was taken: by this run.
struct ChildStartFailed {
  static constexpr EventKind kind = EventKind::child_start_failed;
  std::string workflow_id, run_id, status;
};
// The child's end, journaled in the parent by the database itself (the tell_parent trigger).
struct ChildCompleted {
  static constexpr EventKind kind = EventKind::child_completed;
  Json result;
};
struct ChildFailed {
  static constexpr EventKind kind = EventKind::child_failed;
  std::string status = "failed";  // or cancelled
  std::string error_type, error_message;
};
// A cancel was asked for (request_cancel.sql), then seen by the code (cancel_delivered) at step
// at_step, awaiting step `awaited`, the activities it had not seen finish dropped.
struct CancelRequested {
  static constexpr EventKind kind = EventKind::cancel_requested;
  std::string reason;
};
struct CancelDelivered {
  static constexpr EventKind kind = EventKind::cancel_delivered;
  int at_step = 0;
  int awaited = -1;
  std::vector<int> dropped;
};
struct WorkflowContinued {
  static constexpr EventKind kind = EventKind::workflow_continued;
  Json input;
  std::string run_id;  // the next run's
};
// patched(change_id): the code took a patch's new path here (the event's name: the change id).
struct Patched {
  static constexpr EventKind kind = EventKind::patched;
};
// A call its checks refused, which took its step all the same.
struct CallRefused {
  static constexpr EventKind kind = EventKind::call_refused;
  std::string call;  // "activity" or "child"
  std::string error_type, error_message;
  std::optional<std::string> workflow_id;  // a child's
};

using EventData =
    std::variant<WorkflowStarted, ActivityScheduled, ActivityCompleted, ActivityFailed, TimerStarted, TimerFired,
                 SideEffect, WorkflowCompleted, WorkflowFailed, WorkflowCancelled, WorkflowResumed, ReceiveStarted,
                 MessageReceived, ReceiveTimedOut, EventSet, WaitChosen, ChildStarted, ChildStartFailed, ChildCompleted,
                 ChildFailed, CancelRequested, CancelDelivered, WorkflowContinued, Patched, CallRefused>;

EventKind kind_of(const EventData& data);

// The one JSON form of an event's data.
Json encode(const EventData& data);

// The one reader: `data` of an event of `kind`. durable::Error naming the kind and the field when
// a field it needs is missing or of the wrong type; fields it does not know are ignored (see
// unknown_fields).
EventData decode(EventKind kind, const Json& data);

// The keys of `data` that the vocabulary of `kind` does not have: a writer that went its own way.
std::vector<std::string> unknown_fields(EventKind kind, const Json& data);

}  // namespace durable::journal
