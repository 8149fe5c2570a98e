// The values of Runs (durable/runs.hpp): filters and queries, run records and pages, histories, outcomes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"
#include "durable/status.hpp"
#include "durable/versioning.hpp"

namespace durable {

using TimePoint = std::chrono::system_clock::time_point;

// How a run was started.
enum class StartedBy {
  call,       // Engine::start_workflow / start_or_find
  schedule,   // a cron schedule's fire (origin: the schedule id)
  trigger,    // an event delivered to a trigger (origin: the trigger name)
  fork,       // Runs::fork (forked_from_run, forked_from_step)
  child,      // a parent workflow (parent_run_id)
  continued,  // continue-as-new of the run before it
};
std::string_view to_string(StartedBy started_by);

// Which runs to list or count. Every field narrows; the default matches every run.
struct RunFilter {
  std::vector<WorkflowStatus> statuses{};  // any of these; empty: any status
  std::string workflow_name{};
  std::string id_prefix{};                                   // workflow ids starting with these bytes
  std::optional<TimePoint> created_from{}, created_until{};  // [from, until)
  std::optional<TimePoint> ended_from{}, ended_until{};      // [from, until); ended runs only
  std::string schedule_id{};                                 // runs this schedule started
  std::string trigger{};                                     // runs this trigger started
  RunId parent_run_id{};                                     // children of this run; empty: any run
  // Runs whose app version (EngineOptions::app_version of the engine that started it, then of
  // the last that replayed it) is this; "" for unversioned runs. Empty optional: any.
  std::optional<std::string> app_version{};
  bool blocked_only = false;  // only blocked running runs (see RunSummary::blocked)
};

struct RunQuery {
  RunFilter filter{};
  int limit = 100;       // 1 to 1000
  std::string cursor{};  // RunPage::next_cursor of the page before; empty for the first page
};

// A run as lists show it.
struct RunSummary {
  WorkflowId workflow_id;
  RunId run_id;
  std::string workflow_name;
  WorkflowStatus status = WorkflowStatus::running;
  bool latest = true;  // the latest run of its workflow id
  StartedBy started_by = StartedBy::call;
  std::string origin;       // the schedule id or trigger name that started it
  std::string app_version;  // of the engine that started it, then of the last that replayed it ("" unversioned)
  // Running, but blocked: by a non-determinism error, or a journal this engine's codec does not
  // decode (an unknown key; the divergence's step is then -1). RunInfo::blocked_by says why.
  bool blocked = false;
  TimePoint created_at{}, updated_at{};
  std::optional<TimePoint> ended_at{};
};

// Newest first. Pages stay stable while runs are added: a run started after the first page was
// read never shows up on a later page, and no run shows up twice.
struct RunPage {
  std::vector<RunSummary> runs;
  std::string next_cursor;  // empty on the last page
};

// One run in full.
struct RunInfo : RunSummary {
  Json input, result;  // result: null unless completed
  std::string error_type, error_message;
  int journal_length = 0;
  int activities = 0;       // activity steps its journal scheduled (a fork: the copied ones too)
  int attempts = 0;         // attempts they started, retries included
  int failed_attempts = 0;  // attempts that failed, timed out or lost their lease
  RunId parent_run_id, forked_from_run;
  int forked_from_step = -1;
  // The chain of continue-as-new: the run this one continued, and the run that continued it
  // (status continued). Empty when there is none.
  RunId continued_from_run, continued_as_run;
  // Why the run is blocked, while it is (EngineOptions::on_nondeterminism = block).
  std::optional<BlockedRun> blocked_by;
  std::optional<TimePoint> blocked_at;
};

// A journal event.
struct HistoryEvent {
  int seq = 0;
  std::string kind;  // workflow_started, activity_scheduled, activity_completed, ...
  int step = -1;     // the code's call it records; -1 for the run's own events
  std::string name;  // activity name, "now" / "uuid" for side effects
  TimePoint at{};
  Json data;
};

// One attempt of an activity; the attempt running now has outcome "running" and no end.
struct ActivityAttempt {
  int step = 0;
  std::string activity;
  int attempt = 0;
  std::optional<TimePoint> started_at{}, ended_at{};
  std::string outcome;  // completed, failed (a timeout too: see error_type), lease_expired, running
  std::string error_type, error_message;
  std::optional<TimePoint> retry_at{};  // when the next attempt was due
};

struct HistoryQuery {
  std::int64_t from_seq = 0;  // 0 to INT_MAX (wide, so that a caller's parsed number is checked, not cut)
  int limit = 1000;           // events per page, 1 to 1000
};

// A page of a run's history: its events from `from_seq`, and every attempt of the activities
// scheduled by those events.
struct History {
  std::vector<HistoryEvent> events;
  std::vector<ActivityAttempt> attempts;  // by step, then attempt
  std::optional<int> next_seq;            // where the next page starts; none on the last page
};

struct ForkOptions {
  WorkflowId workflow_id{};  // the new run's workflow id; empty: the source's (whose latest run must have ended)
};

struct PruneOutcome {
  std::int64_t runs = 0;  // runs deleted (or, in a dry run, that would be)
  int batches = 0;        // transactions, each of at most 1,000 runs
};

}  // namespace durable
