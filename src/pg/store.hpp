// Typed operations on durable's tables: each is one statement, one implicit transaction,
// safe to retry on a fresh connection (fenced by lease tokens or insert-if-absent).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "resolved_options.hpp"
#include "pg/connection_pool.hpp"
#include "pg/lease_tokens.hpp"
#include "pg/records.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

enum class FinishOutcome { committed, committed_earlier, fenced_off };
enum class RetryOutcome { retried, past_horizon, fenced_off };
enum class HeartbeatOutcome { kept, lease_lost, cancelled };

struct ClaimedWorkflow {
  std::string workflow_id, run_id, name;
  int next_seq = 0;
  std::int64_t lease_token = 0;
  std::int64_t now_us = 0;  // the database clock at the claim
  // The data of its workflow_started event when that is the whole journal (a fresh run), so the
  // first replay needs no read of the journal.
  std::optional<Json> start_data;
};

struct JournalEvent {
  int seq = 0;
  EventKind kind = EventKind::workflow_started;
  int step = -1;
  std::string name;
  Json data;
};

// A workflow's journal from some event on, with the run and workflow name it belongs to (read in
// one snapshot). `run_id` is empty when there is no such workflow.
struct JournalRead {
  std::string run_id;
  std::string name;
  std::vector<JournalEvent> events;
};

struct ReplayCommit {
  std::string workflow_id;
  std::int64_t lease_token = 0;
  std::vector<NewEvent> events;
  RunStatus status = RunStatus::running;
  Json result;  // null unless completed
  std::string error_type, error_message;
  int seen_seq = 0;              // the journal length the replay saw
  std::int64_t wake_at_us = -1;  // earliest pending timer, -1 for none
  std::vector<NewTask> tasks;    // those marked claim are leased to claim_owner at once
  std::string claim_owner;       // who runs the tasks marked claim (this engine)
  std::string claim_token;       // marks them, so a retry after a lost answer finds them
  Duration lease_margin{0};
};

struct ClaimedTask {
  std::int64_t task_id = 0;
  std::string workflow_id;
  int step = 0;
  std::string name;
  Json input;
  detail::ResolvedActivityOptions options;
  int attempt = 0;
  std::int64_t lease_token = 0;
  std::int64_t claimed_at_us = 0;  // the database clock when it was leased to this engine
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();  // ... and ours
  std::int64_t first_started_at_us = 0;  // when its first attempt started (the retry horizon counts from it)
  bool after_lease_expiry = false;       // the previous attempt's worker lost its lease ...
  std::int64_t lease_lost_at_us = 0;     // ... at this time (the database clock)
  Json last_heartbeat;                   // details of the latest heartbeat of any earlier attempt, or null
  bool leased_at_once = false;           // by the commit that created it, not by a claim
  int handovers = 0;                     // steps before it, in a row, that passed their slot on to the next
};

// What a replay commit wrote.
struct ReplayOutcome {
  std::optional<int> base;           // seq of its first event; nullopt when its lease was lost (nothing written)
  std::vector<ClaimedTask> claimed;  // its tasks leased to this engine in the same commit
  std::int64_t now_us = 0;           // the database clock at the commit
};

// What finishing a task together with the replay it unblocks wrote.
struct StepOutcome {
  FinishOutcome finish = FinishOutcome::fenced_off;
  bool continued = false;            // the replay was committed too
  std::optional<int> base;           // seq of the task's outcome event (when continued)
  std::vector<ClaimedTask> claimed;  // the replay's tasks leased to this engine
  std::int64_t now_us = 0;
};

// A finished task to commit with complete_steps, and the replay its outcome unblocks, if any.
struct StepCommit {
  const ClaimedTask* task = nullptr;
  bool succeeded = false;
  Json result;
  std::string error_type, error_message;
  bool record_attempt = true;            // false: the attempt was recorded already (a lost lease)
  const ReplayCommit* replay = nullptr;  // computed for `expected_seq` events of run `run_id`, plus this outcome
  int expected_seq = -1;
  std::string run_id;
};

struct WorkflowRow {
  std::string run_id, name;
  RunStatus status = RunStatus::running;
  Json result;
  std::string error_type, error_message;
};

Json options_to_json(const detail::ResolvedActivityOptions& options);
detail::ResolvedActivityOptions options_from_json(const Json& json);

class Store {
 public:
  explicit Store(ConnectionPool& pool);

  struct Started {
    bool inserted = false;                  // false: the id was taken (read it with read_workflow)
    std::optional<ClaimedWorkflow> leased;  // the new run, leased to `owner` when one was given
  };
  // With an owner, the new run is leased to it at once: its first replay needs no claim.
  Started start_workflow(const std::string& id, const std::string& run_id, const std::string& name, const Json& input,
                         const std::string& owner = {}, Duration lease = Duration{0});
  // A new run in place of an ended one whose status is in `replaceable` (json array); false if none.
  bool reuse_workflow_id(const std::string& id, const std::string& run_id, const std::string& name, const Json& input,
                         const std::string& replaceable);
  std::optional<WorkflowRow> read_workflow(const std::string& id);
  bool cancel_workflow(const std::string& id);

  std::vector<ClaimedWorkflow> claim_workflows(const std::string& names_json, int limit, const std::string& owner,
                                               Duration lease);
  JournalRead read_journal(const std::string& id, int from_seq);
  ReplayOutcome commit_replay(const ReplayCommit& commit);
  std::vector<ClaimedTask> claim_tasks(const std::string& names_json, int limit, const std::string& owner,
                                       Duration lease_margin);
  // Finishes each step's task, fenced by its lease, and journals its outcome; where a step
  // carries a replay and its workflow is still as that replay saw it, commits the replay too, in
  // the same statement (its tasks marked claim leased to `owner`). At most one step per workflow.
  // One outcome per step, in order.
  std::vector<StepOutcome> complete_steps(const std::vector<const StepCommit*>& steps, const std::string& owner,
                                          Duration lease_margin);
  RetryOutcome retry_task(const ClaimedTask& task, Duration delay, const std::string& error_type,
                          const std::string& error_message);
  // `details` empty keeps the previous details.
  HeartbeatOutcome heartbeat(const ClaimedTask& task, Duration lease, const std::string& details);
  // Hands the task back without counting the attempt; claimable again after `delay`.
  void release_task(const ClaimedTask& task, Duration delay = Duration{0});
  // The right to run the body for the task's (activity, idempotency key). False while another
  // live attempt holds it: the task was handed back to wait (not counted), until the holder lets
  // go of the key (its release wakes the waiters) or its lease runs out.
  bool lock_key_or_wait(const ClaimedTask& task);
  struct ReusableResult {
    Json result;
    bool same_input = true;
    std::string workflow_id;  // whose task committed it
  };
  std::optional<ReusableResult> reusable_result(const ClaimedTask& task);
  // Seconds since the oldest task of these activities (json array of names) became claimable; 0 if none.
  double queue_age(const std::string& names_json);
  // Seconds since the oldest runnable workflow of these names (json array) became claimable; 0 if none.
  double workflow_queue_age(const std::string& names_json);

 private:
  // Runs `claim(tx, token, recovering)`; returns whether it found rows.
  void claim_with_recovery(const std::function<bool(pqxx::transaction_base&, const std::string&, bool)>& claim);
  // The tasks a commit leased at once: from its answer's [task_id, step, lease_token] rows, or,
  // after a lost answer, re-read by the commit's claim token.
  std::vector<ClaimedTask> leased_at_once(const ReplayCommit& commit, const pqxx::field& rows, std::int64_t now_us);
  std::vector<ClaimedTask> reclaim_tasks(pqxx::transaction_base& tx, const std::string& claim_token);
  bool finished_earlier(pqxx::transaction_base& tx, const ClaimedTask& task, bool succeeded);
  bool retried_earlier(pqxx::transaction_base& tx, const ClaimedTask& task);
  double read_age(const char* statement, const std::string& names_json);
  // Makes the tasks waiting for these tasks' idempotency keys claimable, and notifies.
  void wake_key_waiters(const std::vector<std::int64_t>& task_ids);
  // The json of new events and tasks as the statements read them; each task marked claim gets
  // a lease token.
  static Json events_json(const std::vector<NewEvent>& events);
  Json tasks_json(const std::vector<NewTask>& tasks);
  ConnectionPool& pool_;
  LeaseTokens tokens_;
  std::string workflows_channel_, tasks_channel_, ended_channel_;
};

}  // namespace durable::pg
