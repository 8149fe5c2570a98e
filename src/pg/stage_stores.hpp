// What each stage of the step path reads and writes of the tables, as narrow interfaces: the
// dispatcher's (TaskStore: claim, heartbeat, hand back, keys) and the replay's (ReplayStore:
// claim, read, commit, block). Store implements both; the pipeline's unit tests fake them in memory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "pg/records.hpp"

namespace durable::pg {

// A result committed earlier for a task's (activity, idempotency key).
struct ReusableResult {
  Json result;
  bool same_input = true;
  std::string workflow_id;  // whose task committed it
};

// What a claim on a named queue took, and when a full rate window of the queue frees a place
// (none: no window is full).
struct QueuedClaim {
  std::vector<ClaimedTask> tasks;
  std::optional<Duration> retry_in;
};

class TaskStore {
 public:
  virtual ~TaskStore() = default;
  // Up to `limit` claimable tasks of these activities (json array of names), leased to `owner`:
  // those of the default queue when `queues_json` (the queues served, a json array) lists it, and
  // those whose lease ran out on any queue served.
  virtual std::vector<ClaimedTask> claim_tasks(const std::string& names_json, const std::string& queues_json, int limit,
                                               const std::string& owner, Duration lease_margin) = 0;
  // Up to `limit` waiting tasks of these activities on named queue `queue`, within its limits.
  virtual QueuedClaim claim_queued_tasks(const std::string& queue, const std::string& names_json, int limit,
                                         const std::string& owner, Duration lease_margin) = 0;
  virtual RetryOutcome retry_task(const ClaimedTask& task, Duration delay, const std::string& error_type,
                                  const std::string& error_message) = 0;
  // `details` empty keeps the previous details.
  virtual HeartbeatOutcome heartbeat(const ClaimedTask& task, Duration lease, const std::string& details) = 0;
  // Of these running tasks, the ids of those their run no longer wants (cancelled, or deleted).
  virtual std::vector<std::int64_t> unwanted_tasks(const std::vector<std::int64_t>& task_ids) = 0;
  // The body of a task on a named queue returned after its task was cancelled: its place is free.
  virtual void release_place(const ClaimedTask& task) = 0;
  // Hands the task back without counting the attempt; claimable again after `delay`.
  virtual void release_task(const ClaimedTask& task, Duration delay) = 0;
  // Hands back a task this engine cannot run and marks its run blocked (Store::block_task).
  virtual int block_task(const ClaimedTask& task, const Json& reason, Duration retry) = 0;
  // The right to run the body for the task's (activity, key); false: handed back to wait.
  virtual bool lock_key_or_wait(const ClaimedTask& task) = 0;
  // The keys of attempts whose bodies run on after their tasks let go: held for `hold` more.
  virtual void hold_keys(const std::vector<const ClaimedTask*>& tasks, Duration hold) = 0;
  // The keys of attempts whose bodies returned: let go of, and their waiters woken.
  virtual void release_keys(const std::vector<const ClaimedTask*>& tasks) = 0;
  virtual std::optional<ReusableResult> reusable_result(const ClaimedTask& task) = 0;
};

class ReplayStore {
 public:
  virtual ~ReplayStore() = default;
  // Runs of these workflow names on these queues (json arrays).
  virtual std::vector<ClaimedWorkflow> claim_workflows(const std::string& names_json, const std::string& queues_json,
                                                       int limit, const std::string& owner, Duration lease) = 0;
  // Gives a claimed run's lease back (it stays claimable), unless that lease went already.
  virtual void release_workflow(const std::string& run_id, std::int64_t lease_token) = 0;
  virtual JournalRead read_journal(const std::string& run_id, int from_seq) = 0;
  // The run's messages_sent (-1: no such run) and up to `limit` unreceived messages of `topic`.
  virtual std::pair<int, std::vector<InboxMessage>> read_inbox(const std::string& run_id, const std::string& topic,
                                                               int after_seq, int limit) = 0;
  // The latest run of each of these child ids that has one.
  virtual std::map<std::string, TakenId> read_child_ids(const std::set<std::string>& ids) = 0;
  virtual ReplayOutcome commit_replay(const ReplayCommit& commit) = 0;
  // Blocks a run whose replay diverged; how many times since it last made progress (0: lease lost).
  virtual int block_run(const std::string& run_id, std::int64_t lease_token, const Json& divergence,
                        Duration retry) = 0;
  // Asks the running children of an ended run that have the cancel policy to cancel.
  virtual std::vector<std::string> cancel_children(const std::string& run_id) = 0;
};

// A new run's first replay, decided just before the statement that starts it (Store::start_workflow
// on an engine that runs the workflow) and inserted by it, so that the start and the run's first
// decisions, its first activity leased to this engine say, are one commit instead of two.
class FirstReplay {
 public:
  virtual ~FirstReplay() = default;
  // The commit to make with the start of `run`, leased to this engine; nullopt: the start alone
  // (the run is then replayed as any run leased at its start is). Called again on a retry that finds
  // no run of its earlier tries.
  virtual std::optional<ReplayCommit> plan(const ClaimedWorkflow& run) = 0;
  // The claim token of the commit planned last: after a lost answer, the tasks it leased at once.
  virtual std::string planned_claim_token() const = 0;
};

}  // namespace durable::pg
