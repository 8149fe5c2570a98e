// A replay's decisions made ready to commit, and what follows a commit: the pure replay
// (decide()) run with the inbox and child ids it asks for, the tasks it schedules leased to this
// engine at once where slots are free, and, once committed, the journal's copy kept in step, the
// counters and the waiters told. Used by the runner (a claimed replay) and the step finisher (a
// workflow continued in place); it calls neither.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/paused_types.hpp"
#include "base/registry.hpp"
#include "base/wake_signal.hpp"
#include "pg/stage_stores.hpp"
#include "pipeline/activity_slots.hpp"
#include "pipeline/journal_caches.hpp"
#include "pipeline/recorder.hpp"
#include "replay/decide.hpp"

namespace durable::detail {

// What a replay needs of the engine's options.
struct ReplaySettings {
  std::string owner;  // takes the leases of the tasks leased at once
  OnNondeterminism on_nondeterminism = OnNondeterminism::block;
  bool encoded = false;  // a codec is set: logged error messages are shown as stored
  Duration lease_margin{};
  // The engine serves the default queue: its commits lease that queue's tasks at once (a named
  // queue's wait for its claim, under the queue's limits).
  bool serves_default_queue = true;
};

class Replayer {
 public:
  // `slots`: this engine's activity slots, which tasks a commit leases at once run on; null when
  // it runs no activities.
  Replayer(ReplaySettings settings, const Registry& registry, const PausedTypes& paused, pg::ReplayStore& store,
           JournalCaches& caches, ActivitySlots* slots, MetricsRecorder& metrics, EngineSignals& signals,
           const std::atomic<bool>& stopping)
      : settings_(std::move(settings)),
        registry_(registry),
        paused_(paused),
        store_(store),
        caches_(caches),
        slots_(slots),
        metrics_(metrics),
        signals_(signals),
        stopping_(stopping) {}

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
  // Decides (a pure replay), reading the inbox topics and child ids the code asks for when
  // `may_read` (a claimed replay), then reserves slots for the new tasks this engine runs. `hold`:
  // the finished task's hold on the slots when continuing in place.
  Planned plan(const JournalCache& journal, const std::string& workflow_id, std::int64_t now_us, SlotHold* hold,
               bool may_read);
  // After the commit: keep the copy in step and wake whoever waits. `first_seq`: its first event's seq.
  void committed(JournalCache& journal, const Planned& planned, int first_seq,
                 std::chrono::steady_clock::time_point started);
  // Runs the tasks a commit leased to this engine on the slots its plan reserved.
  void launch(std::vector<pg::ClaimedTask> claimed, Reservation slots);

 private:
  // Reads more of the inbox of the journal's run: the next messages of each topic in `topics`.
  void read_inbox(const JournalCache& journal, const std::set<std::string>& topics, Inbox& inbox);
  // Marks the commit's tasks of activities this engine runs to be leased to it at once, as many
  // as the slots have permits for.
  Reservation lease_at_once(pg::ReplayCommit& commit, SlotHold* hold);
  // Fills the commit from what the replay decided.
  void fill(Planned& planned, Decisions decided, const JournalCache& journal, const std::string& workflow_id,
            const Inbox& inbox);
  // Whether the run that ended with `commit` may leave children running under the cancel policy.
  static bool has_running_children(const JournalCache& journal, const pg::ReplayCommit& commit);
  void cancel_children(const std::string& run_id);  // best effort: the orphan sweep is the fallback

  const ReplaySettings settings_;
  const Registry& registry_;
  const PausedTypes& paused_;
  pg::ReplayStore& store_;
  JournalCaches& caches_;
  ActivitySlots* slots_;
  MetricsRecorder& metrics_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
