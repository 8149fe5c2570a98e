// Runs: find and fix workflow runs, from any process (Engine::runs(); the engine need not be
// started). List and count runs, read one with its history, resume a failed run, fork a run from
// a step, cancel, delete and prune: everything an operator tool needs.
//
// Every action that changes something takes an OperatorAction (who and why) and is recorded in
// the audit trail in the same transaction. Bad input throws before anything is written:
// WorkflowNotFound for an unknown run, InvalidRunState for an action the run's state does not
// allow, InvalidArgument for a filter that cannot match, a malformed cursor or an empty reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "durable/audit.hpp"
#include "durable/detail/payload.hpp"
#include "durable/handle.hpp"
#include "durable/ids.hpp"
#include "durable/run_records.hpp"

namespace durable {

namespace detail {
class EngineCore;
}
struct Stats;  // durable/stats.hpp

class Engine;

class Runs {
 public:
  RunPage list(const RunQuery& query = {}) const;
  // How many runs match, per status (statuses with none are left out); `filter.statuses` is ignored.
  // `at_most` > 0: each status is counted up to at_most + 1 only (more than at_most shows as
  // at_most + 1), so that a count over millions of runs reads no more than that many per status.
  std::map<WorkflowStatus, std::int64_t> count_by_status(const RunFilter& filter = {}, std::int64_t at_most = 0) const;
  RunInfo get(const RunId& run_id) const;
  // The latest run of a workflow id.
  RunInfo latest(const WorkflowId& workflow_id) const;
  History history(const RunId& run_id, const HistoryQuery& query = {}) const;

  // A failed run (its id's latest) runs again from its journal with the current code: the
  // activity whose failure failed it gets new attempts under its retry policy, and the ones it
  // had not awaited are scheduled again. Journaled as a workflow_resumed event. A blocked run is
  // unblocked: the next engine free to take it replays it now, whatever its app version.
  UntypedWorkflowHandle resume(const RunId& run_id, const OperatorAction& action);
  // The run's whole history as versioned JSON (durable/versioning.hpp: history_format), for
  // durable::testing::replay and golden replay tests.
  Json export_history(const RunId& run_id) const;
  // A new run whose journal is the source run's events of the steps before `from_step`, going on
  // with the current code; it records the source run and step. `from_step` is 0 (start over with
  // the same input) up to the number of steps the source journaled; any other value (one a
  // caller parsed wider than int, too) is InvalidArgument naming it.
  UntypedWorkflowHandle fork(const RunId& run_id, std::int64_t from_step, const OperatorAction& action,
                             const ForkOptions& options = {});
  // Asks a running run to cancel, as UntypedWorkflowHandle::cancel does, for action.reason. False
  // when the run had ended already; true when it runs (recorded only when this call asked). A run
  // that continued as new passes it on to the chain's running run.
  bool cancel(const RunId& run_id, const OperatorAction& action);
  // Ends a running run as cancelled at once: its code is not told and runs no cleanup, its tasks
  // are dropped, and its children are asked to cancel (per their parent-close policy). For a run
  // no engine runs any more. False when the run had ended already, continued as new included
  // (nothing is recorded then).
  bool terminate(const RunId& run_id, const OperatorAction& action);
  // Deletes an ended run and its history. If it was its id's latest run, the newest one left is.
  void remove(const RunId& run_id, const OperatorAction& action);
  // Deletes ended runs that ended before `ended_before`, with their history, in transactions of at
  // most 1,000 runs; idempotency results stay (see expire_idempotency_results).
  PruneOutcome prune(TimePoint ended_before, const OperatorAction& action, bool dry_run = false);
  // Forgets the idempotency results committed before `created_before`: later tasks with those
  // keys run their bodies again. Returns how many were deleted.
  std::int64_t expire_idempotency_results(TimePoint created_before, const OperatorAction& action);
  std::vector<AuditEntry> audit(const AuditQuery& query = {}) const;
  // The schema's work right now, across all its engines: runs by status, the queues, the engines
  // and their load (durable/stats.hpp).
  Stats stats() const;

 private:
  friend class Engine;  // Engine::runs()
  explicit Runs(std::shared_ptr<detail::EngineCore> core);
  std::shared_ptr<detail::EngineCore> core_;
};

}  // namespace durable
