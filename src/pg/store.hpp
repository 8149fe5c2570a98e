// Typed operations on durable's tables: each is one statement, one implicit transaction,
// safe to retry on a fresh connection (fenced by lease tokens or insert-if-absent). Every write
// goes through ConnectionPool::write, which tells it when an earlier try may have committed, so
// it re-reads and decides instead of assuming. The interface has no libpqxx in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/resolved_options.hpp"
#include "base/sealer.hpp"
#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "pg/lease_tokens.hpp"
#include "pg/records.hpp"
#include "pg/stage_stores.hpp"
#include "pg/store_parts.hpp"

namespace pqxx {
class transaction_base;
class row;
}  // namespace pqxx

namespace durable::pg {

class Store final : public TaskStore, public ReplayStore {
 public:
  // `app_version`: the engine's, recorded on the runs it starts and replays.
  // `sealer`: encodes the user payloads it writes and decodes those it reads (EngineOptions::codec).
  Store(ConnectionPool& pool, std::string app_version = {}, detail::Sealer sealer = {});

  struct Started {
    bool inserted = false;                  // false: the id was taken (read it with read_workflow)
    std::optional<ClaimedWorkflow> leased;  // the new run, leased to `owner` when one was given
    std::optional<ReplayOutcome> replayed;  // its first replay, committed with the start
  };
  // The new latest run of the id, unless the id has a run already. With an owner, the new run is
  // leased to it at once: its first replay needs no claim; with `first` too, the commit that
  // `first` plans for it goes in with the start, in one transaction (see FirstReplay).
  Started start_workflow(const std::string& id, const std::string& run_id, const std::string& name, const Json& input,
                         const RunOrigin& origin, const std::string& owner = {}, Duration lease = Duration{0},
                         FirstReplay* first = nullptr);
  // The same, as the new latest run in place of an ended one whose status is in `replaceable`
  // (json array), which keeps its history; not inserted when the latest run is not replaceable.
  Started reuse_workflow_id(const std::string& id, const std::string& run_id, const std::string& name,
                            const Json& input, const RunOrigin& origin, const std::string& replaceable,
                            const std::string& owner = {}, Duration lease = Duration{0}, FirstReplay* first = nullptr);
  // A start with a debounce key (origin.debounce_key) collapsed into the queued run of workflow
  // `name` with that key, if there is one (debounce_into.sql); nullopt: none, start one.
  std::optional<FoundRun> debounce_into(const std::string& name, const Json& input, const RunOrigin& origin);
  // The running run of `queue` that holds deduplication key `key`.
  std::optional<FoundRun> deduplicated_run(const std::string& queue, const std::string& key);
  // The latest run of a workflow id.
  std::optional<WorkflowRow> read_workflow(const std::string& id);
  // A run by its run id (nullopt also for a run id that is not a uuid).
  std::optional<WorkflowRow> read_run(const std::string& run_id);
  // Asks a running run to cancel with `reason`: false when it has ended (or there is none).
  bool request_cancel(const std::string& run_id, const std::string& reason);
  // Asks the running children of an ended run that have the cancel policy to cancel; returns
  // their run ids (their own children are asked when they end). Children locked by a commit in
  // progress are skipped: the sweep (cancel_orphans) gets them.
  std::vector<std::string> cancel_children(const std::string& run_id) override;
  // Asks up to 1000 running children with the cancel policy whose parent is not running to cancel
  // (a crash kept them from being asked when it ended); returns their run ids.
  std::vector<std::string> cancel_orphans();
  // The latest run of each of these child ids that has one.
  std::map<std::string, TakenId> read_child_ids(const std::set<std::string>& ids) override;

  // A message into the inbox of the id's latest run while it runs (SendOutcome says what was found).
  // Safe to retry: `message_id` tells an earlier try's message apart.
  SendOutcome send_message(const std::string& workflow_id, const std::string& topic, const Json& payload,
                           const std::string& message_id, const std::string& idempotency_key);
  // The run's messages_sent and up to `limit` of its unreceived messages of `topic` after seq
  // `after_seq`, in send order, read in one snapshot. messages_sent is -1 when there is no such run.
  std::pair<int, std::vector<InboxMessage>> read_inbox(const std::string& run_id, const std::string& topic,
                                                       int after_seq, int limit) override;

  EventRead read_event(const std::string& run_id, const std::string& key);

  std::vector<ClaimedWorkflow> claim_workflows(const std::string& names_json, const std::string& queues_json, int limit,
                                               const std::string& owner, Duration lease) override;
  void release_workflow(const std::string& run_id, std::int64_t lease_token) override;
  JournalRead read_journal(const std::string& run_id, int from_seq) override;
  ReplayOutcome commit_replay(const ReplayCommit& commit) override;
  std::vector<ClaimedTask> claim_tasks(const std::string& names_json, const std::string& queues_json, int limit,
                                       const std::string& owner, Duration lease_margin) override;
  QueuedClaim claim_queued_tasks(const std::string& queue, const std::string& names_json, int limit,
                                 const std::string& owner, Duration lease_margin) override;
  void release_place(const ClaimedTask& task) override;
  // Finishes each step's task, fenced by its lease, and journals its outcome; where a step
  // carries a replay and its workflow is still as that replay saw it, commits the replay too, in
  // the same statement (its tasks marked claim leased to `owner`). At most one step per workflow.
  // One outcome per step, in order.
  std::vector<StepOutcome> complete_steps(const std::vector<const StepCommit*>& steps, const std::string& owner,
                                          Duration lease_margin);
  // The same inside the transaction `tx` that transactional bodies share, which commits them with
  // the bodies' writes (not committed here). `statement`: complete_steps' name on tx's
  // connection. Adds to `key_waited` the keys to wake once it committed (wake_key_waiters_of).
  std::vector<StepOutcome> complete_steps_in(pqxx::transaction_base& tx, const char* statement,
                                             const std::vector<const StepCommit*>& steps, const std::string& owner,
                                             Duration lease_margin, Json& key_waited);
  // After the commit of a transactional step was in doubt: committed_earlier (with what its
  // replay leased at once) when it committed, nullopt when it did not.
  std::optional<StepOutcome> committed_step(const StepCommit& step);
  void wake_key_waiters_of(const Json& keys);
  RetryOutcome retry_task(const ClaimedTask& task, Duration delay, const std::string& error_type,
                          const std::string& error_message) override;
  // `details` empty keeps the previous details.
  HeartbeatOutcome heartbeat(const ClaimedTask& task, Duration lease, const std::string& details) override;
  // Of these running tasks, the ids of those their run no longer wants (cancelled, or deleted).
  std::vector<std::int64_t> unwanted_tasks(const std::vector<std::int64_t>& task_ids) override;
  // Hands the task back without counting the attempt; claimable again after `delay`.
  void release_task(const ClaimedTask& task, Duration delay) override;
  // Hands back a task this engine cannot run (its codec lacks a key) without counting the attempt,
  // and marks its run blocked with `reason` (json: step, journaled, asked, message); the task is
  // due again after `retry` doubled per earlier block. Returns how many times the run was
  // blocked since it last made progress (1: the first), 0 when the lease was lost.
  int block_task(const ClaimedTask& task, const Json& reason, Duration retry) override;
  // The right to run the body for the task's (activity, idempotency key). False while another
  // live attempt holds it: the task was handed back to wait (not counted), until the holder lets
  // go of the key (its release wakes the waiters) or its lease runs out.
  bool lock_key_or_wait(const ClaimedTask& task) override;
  // The keys of these attempts (each holding its task's lock), whose bodies still run after their
  // tasks let go (timed out, dropped, handed back): held for `hold` more, whoever else asks.
  void hold_keys(const std::vector<const ClaimedTask*>& tasks, Duration hold) override;
  // The keys of these attempts, whose bodies returned: let go of (unless another lease holds them
  // now), and the tasks waiting for them woken.
  void release_keys(const std::vector<const ClaimedTask*>& tasks) override;
  std::optional<ReusableResult> reusable_result(const ClaimedTask& task) override;
  // Blocks a run whose replay (under `lease_token`) diverged from its journal, due again after
  // `retry` doubled per earlier block. Returns how many times it was blocked since it last made
  // progress (1: the first time), 0 when the lease was lost.
  int block_run(const std::string& run_id, std::int64_t lease_token, const Json& divergence, Duration retry) override;
  // Makes blocked runs of these workflow names (json array) that no engine of this app version
  // tried since they last made progress due now, notifying no one. Returns how many.
  int wake_blocked(const std::string& names_json);
  // Running runs of these workflow names (json array) that are blocked.
  std::int64_t blocked_count(const std::string& names_json);
  // Seconds since the oldest task of these activities (json array of names) became claimable; 0 if none.
  double queue_age(const std::string& names_json, const std::string& queues_json);
  // Seconds since the oldest runnable workflow of these names on these queues (json arrays) became
  // claimable; 0 if none.
  double workflow_queue_age(const std::string& names_json, const std::string& queues_json);

  // This engine is alive for `alive_for` more (`starting`: it just started), with its capacities,
  // in the schema's list of engines; and, as it stops, no longer.
  void engine_alive(const std::string& owner, const std::string& instance, int activity_capacity, int workflow_capacity,
                    Duration alive_for, bool starting);
  void engine_stopped(const std::string& owner);

 private:
  // The run a read statement (read_workflow, read_run) finds by `key`.
  std::optional<WorkflowRow> read_one_run(const char* statement, const std::string& key);
  Started insert_run(const std::string& id, const std::string& run_id, const std::string& name, const Json& input,
                     const RunOrigin& origin, const std::string& replaceable, const std::string& owner, Duration lease,
                     FirstReplay* first);
  // start_workflow's parameters for a first replay committed with the start.
  store_parts::FirstReplayArgs first_replay_args(const ReplayCommit& commit);
  // commit_replay's statement for `commit`, and what its answer says went in (after a lost answer,
  // `maybe_committed`: the tasks an earlier try leased at once, read back).
  pqxx::row exec_commit_replay(pqxx::transaction_base& tx, const ReplayCommit& commit);
  ReplayOutcome replay_committed(pqxx::transaction_base& tx, const ReplayCommit& commit, const pqxx::row& row,
                                 bool maybe_committed);
  // The rows complete_steps reads, and the statement itself with its answer read.
  Json steps_json(const std::vector<const StepCommit*>& steps);
  std::vector<StepOutcome> run_complete_steps(pqxx::transaction_base& tx, const char* statement,
                                              const std::string& rows_text, const std::vector<const StepCommit*>& steps,
                                              const std::string& owner, Duration lease_margin, bool maybe_committed,
                                              Json& key_waited);
  // Makes the tasks waiting for these tasks' idempotency keys claimable, and notifies.
  void wake_key_waiters(const Json& keys);  // [[activity, key hex], ...]
  // The json of new tasks as the statements read them; each task marked claim gets a lease token.
  Json tasks_json(const std::vector<NewTask>& tasks);
  ConnectionPool& pool_;
  const std::string app_version_;
  const detail::Sealer seal_;
  LeaseTokens tokens_;
  std::string workflows_channel_, tasks_channel_, ended_channel_, events_channel_;
};

}  // namespace durable::pg
