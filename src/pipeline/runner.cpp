#include "pipeline/runner.hpp"

#include <algorithm>
#include <random>

#include "base/exceptions.hpp"
#include "base/failpoint.hpp"
#include "base/log.hpp"

namespace durable::detail {

Runner::Runner(RunnerSettings settings, const PausedTypes& paused, pg::ReplayStore& store, Replayer& replayer,
               JournalCaches& caches, MetricsRecorder& metrics, WakeSignal& workflow_work,
               const std::atomic<bool>& stopping)
    : settings_(std::move(settings)),
      store_(store),
      replayer_(replayer),
      caches_(caches),
      metrics_(metrics),
      workflow_work_(workflow_work),
      stopping_(stopping),
      paused_(paused) {}

void Runner::offer(pg::ClaimedWorkflow claim) {
  {
    std::lock_guard lock(offered_mutex_);
    offered_.push_back(std::move(claim));
  }
  workflow_work_.notify_one();
}

int Runner::offered_count() {
  std::lock_guard lock(offered_mutex_);
  return static_cast<int>(offered_.size());
}

std::optional<pg::ClaimedWorkflow> Runner::take_offered() {
  std::lock_guard lock(offered_mutex_);
  if (offered_.empty()) return std::nullopt;
  auto claim = std::move(offered_.front());
  offered_.pop_front();
  return claim;
}

std::optional<pg::ClaimedWorkflow> Runner::claim() {
  // Up to one run per runner thread in one claim: the others are handed theirs, or take them as
  // soon as they are free (a wait of one replay at most, well within the lease).
  const int limit = std::max(1, settings_.concurrency - offered_count());
  try {
    const auto started = std::chrono::steady_clock::now();
    const auto names = paused_.workflow_names_json();
    failpoint("runner.before_claim");  // the names are read, the claim not sent: a pause may come between
    auto claimed = store_.claim_workflows(*names, settings_.queues_json, limit, settings_.owner, settings_.lease);
    // The names were read before the claim went out: a pause of a type since then (this engine's
    // own, say, followed at once by a start of that type) gives the runs of that type back.
    std::erase_if(claimed, [&](const pg::ClaimedWorkflow& run) {
      if (!paused_.workflow_paused(run.name)) return false;
      store_.release_workflow(run.run_id, run.lease_token);
      return true;
    });
    if (claimed.empty()) return std::nullopt;
    metrics_.claim_latency.observe(std::chrono::steady_clock::now() - started);
    for (std::size_t i = 1; i < claimed.size(); ++i) offer(std::move(claimed[i]));
    return std::move(claimed.front());
  } catch (const std::exception& e) {
    logger().warn("claiming workflows failed: {}", e.what());
    return std::nullopt;
  }
}

void Runner::loop() {
  std::mt19937 jitter{std::random_device{}()};
  for (;;) {
    const auto seen = workflow_work_.generation();
    std::optional<pg::ClaimedWorkflow> claim = take_offered();  // leased to us already: no claim
    if (!claim && stopping_.load()) return;
    if (!claim) claim = this->claim();
    if (claim) {
      workflow_work_.notify_one();  // there may be more: pass the wake-up on
      try {
        process(*claim);
      } catch (const std::exception& e) {
        // Nothing was committed; the lease runs out and the workflow is replayed again.
        logger().warn("replay of workflow '{}' failed and will be retried: {}", claim->workflow_id, e.what());
        caches_.forget(claim->run_id);
      }
    } else {
      const auto poll = settings_.poll_interval;
      const auto spread = std::uniform_int_distribution<long>(0, poll.count() / 4 + 1)(jitter);
      workflow_work_.wait_for(seen, poll + std::chrono::milliseconds{spread});
    }
  }
}

void Runner::process(const pg::ClaimedWorkflow& claim) {
  const auto started = std::chrono::steady_clock::now();
  auto journal = caches_.of_claim(claim);
  std::unique_lock busy(journal->busy);
  // The copy may hold more events than the claim saw: a dispatcher thread may have read the
  // journal after the claim (outcomes are journaled under a live replay lease too). Newer, not
  // wrong: the commit compares the length the replay saw with the database's.
  journal->replayed_seq = claim.replayed_seq;
  if (journal->next_seq == 0 && claim.next_seq == 1 && claim.start_data) {
    journal->apply({0, journal::EventKind::workflow_started, -1, "", *claim.start_data});  // a fresh run: no read
  } else if (journal->next_seq < claim.next_seq) {
    try {
      journal->apply(store_.read_journal(claim.run_id, journal->next_seq).events);
    } catch (const CodecError& e) {
      block_undecodable(claim, e);
      caches_.forget(claim.run_id);
      return;
    }
  }
  Replayer::Planned planned;
  pg::ReplayOutcome outcome;
  for (int tries = 1;; ++tries) {
    planned = replayer_.plan(*journal, claim.workflow_id, claim.now_us, nullptr, true);
    if (planned.blocked) {
      block(claim, *journal, *planned.blocked);
      return;
    }
    planned.commit.lease_token = claim.lease_token;
    failpoint("replay.before_commit");               // what comes from here on was not read: a cancel request, say
    outcome = store_.commit_replay(planned.commit);  // a throw frees the slots
    // Refused: a child id the replay read as free was taken before the commit (decided again with
    // the ids read anew, the start journals WorkflowAlreadyStarted instead), or the journal of a
    // run continuing as new grew (decided again with what came).
    if (!outcome.refused) break;
    if (tries == 10) throw Error("what the replay read kept changing before its commit; retrying later");
    logger().debug("replay of '{}' read ids or a journal that changed before its commit: deciding again",
                   claim.workflow_id);
    journal->apply(store_.read_journal(claim.run_id, journal->next_seq).events);
  }
  failpoint("replay.after_commit");  // what went in stays in: no child starts again, say
  if (outcome.base) {
    write_log_lines(planned.log_lines);
    replayer_.committed(*journal, planned, *outcome.base, started);
  } else {
    logger().debug("replay of '{}' lost its lease, or committed on a connection that then broke", claim.workflow_id);
    caches_.forget(claim.run_id);
  }
  busy.unlock();  // before its tasks run: their completions continue in place with this journal
  replayer_.launch(std::move(outcome.claimed), std::move(planned.slots));
}

void Runner::block_undecodable(const pg::ClaimedWorkflow& claim, const CodecError& error) {
  const std::string message = fmt::format("its journal does not decode: {}", error.what());
  const Json reason = {{"step", -1}, {"journaled", ""}, {"asked", ""}, {"message", message}};
  const int times = store_.block_run(claim.run_id, claim.lease_token, reason, settings_.poll_interval);
  if (times == 1) {
    logger().warn(
        "workflow '{}' (run {}) is blocked, not failed, until an engine whose codec decodes its journal takes "
        "it on (EngineOptions::codec; this engine tries it again now and then): {}",
        claim.workflow_id, claim.run_id, message);
  }
}

void Runner::block(const pg::ClaimedWorkflow& claim, const JournalCache& journal, const NonDeterminismError& error) {
  const Json divergence = {
      {"step", error.step()}, {"journaled", error.journaled()}, {"asked", error.asked()}, {"message", error.what()}};
  const int times = store_.block_run(claim.run_id, claim.lease_token, divergence, settings_.poll_interval);
  if (times == 1) {
    logger().warn(
        "workflow '{}' ({}, run {}) is blocked, not failed, and stays running until an engine of another app version "
        "than '{}', or Engine::runs().resume(), takes it on (this build tries it again now and then): {}",
        claim.workflow_id, journal.name, claim.run_id, settings_.app_version, error.what());
  } else if (times > 1) {
    logger().debug("workflow '{}' (run {}) is still blocked ({} tries)", claim.workflow_id, claim.run_id, times);
  }
}

}  // namespace durable::detail
