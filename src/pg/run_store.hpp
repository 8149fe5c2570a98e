// The management statements on runs: listing, reading and operator actions, each action in one
// transaction with its audit entry. Inputs are validated by the caller (engine/runs.cpp); filters
// build their SQL from the fields present, so each query is planned for what it asks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/sealer.hpp"
#include "durable/runs.hpp"
#include "durable/stats.hpp"

namespace durable::pg {

class ConnectionPool;

// A run as a new one copies it (fork): events renumbered from 0, tasks for its steps still open.
struct ForkedRun {
  std::string workflow_id, run_id, name, source_run_id;
  int from_step = 0;
  Json input;
  Json events = Json::array();      // [{kind, step, name, data}], in order
  Json open_steps = Json::array();  // steps whose tasks run again, as their scheduled events say
  bool replace_latest = false;      // the id's latest run has ended: this one becomes the latest
};

class RunStore {
 public:
  // `sealer`: decodes what it reads (encoded values read as stored when there is no codec, so the
  // operator's views show them marked) and encodes the copies a fork writes.
  explicit RunStore(ConnectionPool& pool, detail::Sealer sealer = {});

  // `cursor_us` / `cursor_run`: the last run of the page before (none for the first page).
  RunPage list(const RunFilter& filter, int limit, std::optional<std::int64_t> cursor_us,
               const std::string& cursor_run);
  // `at_most` > 0: each status counted up to at_most + 1 only.
  std::map<WorkflowStatus, std::int64_t> count_by_status(const RunFilter& filter, std::int64_t at_most = 0);
  std::optional<RunInfo> get(const std::string& run_id);
  bool exists(const std::string& run_id);  // the row alone: nothing decoded, no counts
  std::optional<RunInfo> latest(const std::string& workflow_id);
  History history(const std::string& run_id, int from_seq, int limit);
  std::vector<AuditEntry> audit(int limit, std::optional<std::int64_t> before);
  Stats stats();

  // Asks a running run to cancel (its code sees WorkflowCancelled), audited when this call asked.
  // False when the run has ended; true when it runs, asked now or before.
  bool request_cancel(const std::string& run_id, const OperatorAction& action);
  // Ends a running run as cancelled at once, its code not told; false when it had ended.
  bool terminate(const std::string& run_id, const OperatorAction& action);
  // Deletes the run if it has ended; false if it is running (nothing written).
  bool remove(const std::string& run_id, const OperatorAction& action);
  std::int64_t db_now_us();  // the database clock (time skipping included)
  // `exclusive`: each batch first takes the schema's retention lock, and the prune stops when
  // another engine holds it (periodic retention: one engine at a time).
  PruneOutcome prune(std::int64_t ended_before_us, const OperatorAction& action, bool dry_run, bool exclusive = false);
  std::int64_t expire_idempotency_results(std::int64_t created_before_us, const OperatorAction& action);
  // Makes a failed latest run running again and journals workflow_resumed with `retry_steps` (json
  // array), whose tasks, and those of `reopen_steps`, are pending again with fresh attempts.
  // False if the run is no longer a failed latest run.
  // False too if its journal is no longer `seen_seq` events long (it changed since it was read).
  bool resume(const std::string& run_id, int seen_seq, const Json& retry_steps, const Json& reopen_steps,
              const OperatorAction& action);
  // Makes a blocked running run runnable now and no longer blocked; false if it is not blocked
  // (or not running).
  bool unblock(const std::string& run_id, const OperatorAction& action);
  // Inserts the forked run; false if the id's latest run is running (or, for a new id, exists).
  bool fork(const ForkedRun& run, const OperatorAction& action);

 private:
  ConnectionPool& pool_;
  const detail::Sealer seal_;
  std::string workflows_channel_, tasks_channel_, ended_channel_;
};

}  // namespace durable::pg
