// Claims runnable workflows (FOR UPDATE SKIP LOCKED), replays their code against the journal
// and commits the new events, tasks and status in one fenced statement.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/paused_types.hpp"
#include "base/wake_signal.hpp"
#include "pg/stage_stores.hpp"
#include "pipeline/first_replay.hpp"
#include "pipeline/journal_caches.hpp"
#include "pipeline/recorder.hpp"
#include "pipeline/replayer.hpp"

namespace durable::detail {

// What the runner needs of the engine's options.
struct RunnerSettings {
  std::string owner;                           // takes the workflow leases
  int concurrency = 1;                         // replays at once: a claim takes up to this many runs
  Duration lease{};                            // how long one replay may hold a run
  Duration poll_interval{};                    // the wait between claims when no NOTIFY comes; a block's first retry
  std::string app_version;                     // named when a run is blocked
  std::string queues_json = R"(["default"])";  // the queues whose runs it claims (json array)
};

class Runner {
 public:
  // `paused`: the workflow types paused, whose runs it does not claim.
  Runner(RunnerSettings settings, const PausedTypes& paused, pg::ReplayStore& store, Replayer& replayer,
         JournalCaches& caches, MetricsRecorder& metrics, WakeSignal& workflow_work, const std::atomic<bool>& stopping);
  void loop();  // one per runner thread, until the engine stops (then it replays what was offered)
  // A run leased to this engine already (just started here): replayed by the next free runner thread.
  void offer(pg::ClaimedWorkflow claim);
  // The first replay of a run this engine is about to start, to commit with its start.
  std::unique_ptr<StartReplay> first_replay() { return std::make_unique<StartReplay>(replayer_, caches_); }
  // Replays one claimed run and commits what it decided (the loop's work, for one claim).
  void process(const pg::ClaimedWorkflow& claim);

 private:
  // Blocks the claimed run whose replay diverged (EngineOptions::on_nondeterminism = block).
  void block(const pg::ClaimedWorkflow& claim, const JournalCache& journal, const NonDeterminismError& error);
  // Blocks a run whose journal does not decode with this engine's codec (a key it does not know, or
  // a value changed outside durable), as a divergent one is: it stays running, tried again now and then.
  void block_undecodable(const pg::ClaimedWorkflow& claim, const CodecError& error);
  // Claims up to the free replays' worth of runs: the first to replay here, the others offered.
  std::optional<pg::ClaimedWorkflow> claim();
  std::optional<pg::ClaimedWorkflow> take_offered();
  int offered_count();

  const RunnerSettings settings_;
  pg::ReplayStore& store_;
  Replayer& replayer_;
  JournalCaches& caches_;
  MetricsRecorder& metrics_;
  WakeSignal& workflow_work_;
  const std::atomic<bool>& stopping_;
  const PausedTypes& paused_;
  std::mutex offered_mutex_;
  std::deque<pg::ClaimedWorkflow> offered_;
};

}  // namespace durable::detail
