// Commits finished attempts' outcomes: through the group commit (or a transactional activity's
// own transaction), and, when this engine holds the workflow's journal, together with the replay
// the outcome unblocks (continuing in place: one commit instead of a commit, a claim and another).
#pragma once

#include <string>

#include "pipeline/journal_caches.hpp"
#include "pipeline/outcome_committer.hpp"
#include "pipeline/recorder.hpp"
#include "pipeline/replayer.hpp"
#include "pipeline/step_committer.hpp"

namespace durable::detail {

class StepFinisher final : public OutcomeCommitter {
 public:
  // `owner` and `lease_margin`: the leases a transactional commit gives the tasks it leases at once.
  StepFinisher(StepCommitter& steps, std::string owner, Duration lease_margin, MetricsRecorder& metrics)
      : steps_(steps), owner_(std::move(owner)), lease_margin_(lease_margin), metrics_(metrics) {}
  // Outcomes of workflows whose journal this engine holds continue in place through these; set
  // before the first outcome, on an engine that runs workflows.
  // `paused`: a step of a paused workflow type commits without carrying its run on.
  void continue_in_place_with(Replayer& replayer, JournalCaches& caches, const PausedTypes& paused) {
    replayer_ = &replayer;
    caches_ = &caches;
    paused_ = &paused;
  }

  Committed commit(const Outcome& outcome, SlotHold* hold, pg::ActivityTransaction* transaction) override;

 private:
  pg::StepOutcome commit_step(const pg::StepCommit& step, pg::ActivityTransaction* transaction);
  // Commits the outcome together with the replay it unblocks, in one statement, when no one else
  // is replaying the workflow here. nullopt when it cannot try (the caller commits the outcome
  // alone); `step.continued` says whether the replay went in too (if not, the workflow was only
  // made runnable).
  std::optional<Committed> continue_in_place(const Outcome& outcome, SlotHold* hold,
                                             pg::ActivityTransaction* transaction);

  StepCommitter& steps_;
  const std::string owner_;
  const Duration lease_margin_;
  MetricsRecorder& metrics_;
  Replayer* replayer_ = nullptr;
  JournalCaches* caches_ = nullptr;
  const PausedTypes* paused_ = nullptr;
};

}  // namespace durable::detail
