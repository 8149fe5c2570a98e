// The in-memory view of one workflow's journal: what each step (call) of the code got.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "pg/records.hpp"

namespace durable::detail {

enum class StepKind { activity, timer, side_effect, receive, publish, wait, child, patch };

struct StepRecord {
  StepKind kind = StepKind::activity;
  // The activity's name; "now" or "uuid" for side effects; empty for timers; a receive's topic; a
  // published event's key; the steps a wait_any waited on ("2,5"); a child's workflow name; a
  // patch marker's change id.
  std::string name;
  std::string child_id;  // a child's workflow id
  // The activity or child finished, the timer fired, the receive returned (side effects are done
  // at once). A child whose id was taken is done and failed at once, with its status "taken".
  bool done = false;
  bool empty = false;  // a receive that returned nothing: its time ran out
  bool failed = false;
  // Activity or child result, side-effect value, message payload, the index a wait_any chose; for
  // a child whose id was taken, the run holding it: {"run_id", "status"}.
  Json value;
  std::string error_type, error_message;
  std::string status;    // a child that failed: "failed" or "cancelled"; "taken" when it never started
  bool dropped = false;  // an activity a delivered cancel failed: later outcomes of it do not count
  // An activity or child call its checks refused (call_refused): done and failed, with the error;
  // a replay runs the checks again there.
  bool refused = false;
  int attempts = 0;
  std::int64_t fire_at_us = 0;  // timers; a receive's deadline (-1: none)
  // The seq of the event that journaled an outcome written from outside the code (an activity's or
  // a child's end); -1 for outcomes a replay journaled itself (a timer fired, a message taken).
  int outside_outcome_seq = -1;
};

// Cached per workflow between replays; only the journal's new tail is read each time.
struct JournalCache {
  std::string run_id;
  std::string name;  // the workflow's registered name
  std::mutex busy;   // held by whoever replays from it (a runner, or a dispatcher thread continuing in place)
  int next_seq = 0;  // events [0, next_seq) are applied
  // The journal length the last committed replay had read (0: none was committed): outcomes from
  // outside journaled from there on are news to the code (WorkflowContext::is_replaying turns
  // false at them).
  int replayed_seq = 0;
  Json input;
  Json schedule;  // the schedule fire that started the run, or null
  int depth = 0;  // 0 for a run started by a call, schedule or trigger; its parent's + 1 for a child
  std::optional<std::string> cancel_reason;  // a cancel was requested (cancel_requested)
  // Where the code saw it (cancel_delivered): at the call that would open `at_step`, or at the
  // await of step `awaited` (-1: at a call) while the code had opened `at_step` steps.
  struct CancelDelivery {
    int at_step = 0;
    int awaited = -1;
  };
  std::optional<CancelDelivery> cancel_delivered;
  std::vector<StepRecord> steps;

  void apply(const pg::JournalEvent& event);
  void apply(const std::vector<pg::JournalEvent>& events);  // in order

 private:
  struct Applier;                                             // one event's data applied, per kind
  void resume(int seq, const std::vector<int>& retry_steps);  // workflow_resumed
};

// Marks an activity step dropped by a delivered cancel: failed with durable::WorkflowCancelled.
void drop(StepRecord& step);

// Describes a step for error messages: "activity 'charge_card'", "a timer", "now()".
std::string describe(StepKind kind, const std::string& name);

// The message of a NonDeterminismError: where the code of workflow `workflow_name` (run of
// `workflow_id`) left its journal, and what to do about it.
std::string nondeterminism_message(const std::string& workflow_id, const std::string& workflow_name, int step,
                                   const std::string& journaled, const std::string& asked);

}  // namespace durable::detail
