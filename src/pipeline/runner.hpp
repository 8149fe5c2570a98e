// Claims runnable workflows (FOR UPDATE SKIP LOCKED), replays their code against the
// journal and commits the new events, tasks and status in one fenced statement.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "pipeline/activity_slots.hpp"
#include "pipeline/stage_parts.hpp"
#include "replay/child_ids.hpp"
#include "replay/inbox.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

struct ErrorInfo;

class Runner {
 public:
  // A finished task commits with the replay it unblocks through the parts' step committer.
  // `slots`: this engine's activity slots, which tasks a replay commit leases at once run on;
  // null when it runs no activities.
  Runner(StageParts parts, ActivitySlots* slots);
  void loop();  // one per runner thread, until the engine stops (then it replays what was offered)
  // A run leased to this engine already (just started here): replayed by the next free runner thread.
  void offer(pg::ClaimedWorkflow claim);

  // What finish_and_continue committed, and the slots reserved for the tasks it leased to this
  // engine (step.claimed): the caller launches them.
  struct Continued {
    pg::StepOutcome step;
    Reservation slots;
  };
  // Continue in place: commits a finished task together with the replay its outcome unblocks,
  // in one statement, when no one else is replaying the workflow here. The journal is this
  // engine's cached copy, or read from the database when it has none. nullopt when it cannot try
  // (the caller finishes the task alone); `step.continued` says whether the replay went in too
  // (if not, the workflow was only made runnable). `hold`: the finished task's hold on the
  // slots, which says whether its workflow may lease its next task at once (null: it may).
  // `commit` commits the step (the group commit, or a transactional activity's transaction).
  using CommitStep = std::function<pg::StepOutcome(const pg::StepCommit&)>;
  std::optional<Continued> finish_and_continue(const pg::ClaimedTask& task, bool succeeded, const Json& result,
                                               const ErrorInfo& error, bool record_attempt, SlotHold* hold,
                                               const CommitStep& commit);

 private:
  // A replay's decisions, ready to commit, and the slots reserved for the tasks it leases at once.
  struct Planned {
    pg::ReplayCommit commit;
    bool ended = false;
    Reservation slots;
    // Not planned: the code reached a receive or set an event, which only a claimed replay may
    // commit (continuing in place reads no inbox and publishes nothing).
    bool needs_claim = false;
    // The code diverged from the journal and the run is to be blocked, not committed.
    std::optional<NonDeterminismError> blocked;
    std::vector<spdlog::details::log_msg_buffer> log_lines;  // to write once the commit went in
  };
  // Blocks the claimed run whose replay diverged (EngineOptions::on_nondeterminism = block).
  void block(const pg::ClaimedWorkflow& claim, const JournalCache& journal, const NonDeterminismError& error);
  // Blocks a run whose journal does not decode with this engine's codec (a key it does not know, or
  // a value changed outside durable), as a divergent one is: it stays running, tried again now and then.
  void block_undecodable(const pg::ClaimedWorkflow& claim, const CodecError& error);
  // Decides (a pure replay), reading the inbox topics the code receives from when `read_inbox`,
  // then reserves slots for the new tasks this engine runs.
  Planned plan(const JournalCache& journal, const std::string& workflow_id, std::int64_t now_us, SlotHold* hold,
               bool read_inbox);
  // Reads more of the inbox of the journal's run: the next messages of each topic in `topics`.
  void read_inbox(const JournalCache& journal, const std::set<std::string>& topics, Inbox& inbox);
  // Marks the commit's tasks of activities this engine runs to be leased to it at once, as many
  // as `slots` has permits for.
  Reservation lease_at_once(pg::ReplayCommit& commit, SlotHold* hold);
  // After the commit: keep the cache in step and wake whoever waits. `first_seq`: its first event's seq.
  void committed(JournalCache& journal, const Planned& planned, int first_seq,
                 std::chrono::steady_clock::time_point started);
  void process(const pg::ClaimedWorkflow& claim);
  // Whether the run that ended with `commit` may leave children running under the cancel policy.
  static bool has_running_children(const JournalCache& journal, const pg::ReplayCommit& commit);
  void cancel_children(const std::string& run_id);  // best effort: the orphan sweep is the fallback
  std::shared_ptr<JournalCache> cached(const pg::ClaimedWorkflow& claim);
  // This engine's journal of a finished task's workflow, read from the database when it has none
  // (the task was claimed here, the workflow replayed elsewhere); null if it cannot replay it.
  std::shared_ptr<JournalCache> journal_of(const pg::ClaimedTask& task);
  // Whether the journal (held busy) knows the task's step, after reading the events it lacks.
  bool knows_step(JournalCache& journal, const pg::ClaimedTask& task);
  void forget(const std::string& run_id);

  const StageParts parts_;
  ActivitySlots* slots_;
  std::string names_json_;
  std::mutex offered_mutex_;
  std::deque<pg::ClaimedWorkflow> offered_;
  std::optional<pg::ClaimedWorkflow> take_offered();
  int offered_count();
  std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<JournalCache>> cache_;
  static constexpr std::size_t max_cached_ = 10000;
};

}  // namespace durable::detail
