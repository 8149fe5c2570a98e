// The first replay of a run this engine starts and runs, decided just before the start's statement,
// which inserts it (pg::FirstReplay), so that the start and the run's first decisions are one commit: a one-step
// run takes two commits instead of three. It reads nothing (the journal is the start), so what
// needs a read (a receive, an event, a child, a continue-as-new) or a block is left to a runner
// thread, as for any run leased at its start.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pg/stage_stores.hpp"
#include "pipeline/journal_caches.hpp"
#include "pipeline/replayer.hpp"

namespace durable::detail {

class Runner;

class StartReplay final : public pg::FirstReplay {
 public:
  StartReplay(Replayer& replayer, JournalCaches& caches) : replayer_(replayer), caches_(caches) {}
  StartReplay(const StartReplay&) = delete;
  StartReplay& operator=(const StartReplay&) = delete;
  ~StartReplay() override;  // a start that threw: the copy of a run that may not exist is dropped

  std::optional<pg::ReplayCommit> plan(const pg::ClaimedWorkflow& run) override;
  std::string planned_claim_token() const override;
  // After the start's statement: with a first replay in, keeps the journal's copy in step and
  // launches the tasks it leased at once; else hands the run leased at its start to `runner`.
  void started(Runner& runner, std::optional<pg::ClaimedWorkflow> leased, std::optional<pg::ReplayOutcome> replayed);

 private:
  void let_go();  // of the journal's copy

  Replayer& replayer_;
  JournalCaches& caches_;
  std::shared_ptr<JournalCache> journal_;
  std::unique_lock<std::mutex> busy_;
  Replayer::Planned planned_;
  bool has_commit_ = false;
  std::chrono::steady_clock::time_point began_{};
};

}  // namespace durable::detail
