#include "replay/runner.hpp"

#include "log.hpp"
#include "telemetry/recorder.hpp"

#include <random>

#include "durable/workflow.hpp"
#include "engine_core.hpp"
#include "exceptions.hpp"
#include "replay/replay.hpp"

namespace durable::detail {

Runner::Runner(EngineCore& core) : core_(core), names_json_(core.registry.workflow_names_json()) {}

void Runner::loop() {
  std::mt19937 jitter{std::random_device{}()};
  while (!core_.stopping()) {
    const auto seen = core_.workflow_work.generation();
    std::vector<pg::ClaimedWorkflow> claimed;
    try {
      ScopedLatency timed(core_.metrics.claim_latency);
      claimed = core_.store.claim_workflows(names_json_, 1, core_.owner(), core_.options.workflow_lease);
    } catch (const std::exception& e) {
      detail::logger().warn("claiming workflows failed: {}", e.what());
    }
    for (const auto& claim : claimed) {
      try {
        process(claim);
      } catch (const std::exception& e) {
        // Nothing was committed; the lease runs out and the workflow is replayed again.
        detail::logger().warn("replay of workflow '{}' failed and will be retried: {}", claim.workflow_id, e.what());
        forget(claim.workflow_id);
      }
    }
    if (claimed.empty()) {
      const auto poll = core_.options.poll_interval;
      const auto spread = std::uniform_int_distribution<long>(0, poll.count() / 4 + 1)(jitter);
      core_.workflow_work.wait_for(seen, poll + std::chrono::milliseconds{spread});
    }
  }
}

std::shared_ptr<JournalCache> Runner::cached(const pg::ClaimedWorkflow& claim) {
  std::lock_guard lock(cache_mutex_);
  auto it = cache_.find(claim.workflow_id);
  // Reuse unless it is another run under the same id, or somehow ahead of the database.
  if (it != cache_.end() && it->second->run_id == claim.run_id && it->second->next_seq <= claim.next_seq) {
    return it->second;
  }
  if (cache_.size() >= max_cached_) cache_.clear();  // crude bound: evicted journals reload from the database
  auto fresh = std::make_shared<JournalCache>();
  fresh->run_id = claim.run_id;
  cache_[claim.workflow_id] = fresh;
  return fresh;
}

void Runner::forget(const std::string& workflow_id) {
  std::lock_guard lock(cache_mutex_);
  cache_.erase(workflow_id);
}

void Runner::process(const pg::ClaimedWorkflow& claim) {
  ScopedLatency timed(core_.metrics.replay_latency);
  auto journal = cached(claim);
  if (journal->next_seq < claim.next_seq) {
    for (const auto& event : core_.store.read_journal(claim.workflow_id, journal->next_seq)) journal->apply(event);
  }
  const WorkflowDefinition& def = core_.registry.workflow(claim.name);

  Replay replay(claim.workflow_id, claim.name, *journal, claim.now_us, core_.registry);
  WorkflowContext ctx(replay);
  pg::ReplayCommit commit;
  commit.workflow_id = claim.workflow_id;
  commit.lease_token = claim.lease_token;
  commit.seen_seq = journal->next_seq;

  bool ended = false;
  auto fail = [&](std::string type, std::string message) {
    commit.status = "failed";
    commit.error_type = std::move(type);
    commit.error_message = std::move(message);
    ended = true;
  };
  try {
    Json result = def.run(ctx, journal->input);
    if (!replay.suspended() && !replay.nondeterminism()) {
      check_payload(result, fmt::format("the result of workflow '{}'", claim.workflow_id));
      commit.status = "completed";
      commit.result = std::move(result);
      ended = true;
    }
  } catch (const Suspend&) {
  } catch (...) {
    if (!replay.suspended() && !replay.nondeterminism()) {
      ErrorInfo error = current_error();
      fail(error.type, error.message);
    }
  }
  if (replay.nondeterminism()) {
    fail("durable::NonDeterminismError", replay.nondeterminism()->what());
  }

  commit.events = replay.events;
  if (ended) {
    // An ended run starts no new activities: drop the ones it scheduled without awaiting.
    Json kept = Json::array();
    for (auto& e : commit.events) {
      if (e["kind"] != "activity_scheduled") kept.push_back(std::move(e));
    }
    commit.events = std::move(kept);
    if (commit.status == "completed") {
      commit.events.push_back({{"kind", "workflow_completed"}, {"data", {{"result", commit.result}}}});
    } else {
      commit.events.push_back({{"kind", "workflow_failed"},
                               {"data", {{"error_type", commit.error_type}, {"error_message", commit.error_message}}}});
      detail::logger().info("workflow '{}' failed: {}: {}", claim.workflow_id, commit.error_type, commit.error_message);
    }
  } else {
    commit.tasks = replay.tasks;
    commit.wake_at_us = replay.wake_at_us();
  }

  const std::optional<int> base = core_.store.commit_replay(commit);
  if (!base) {
    detail::logger().debug("replay of '{}' lost its lease; discarded", claim.workflow_id);
    forget(claim.workflow_id);
    return;
  }
  ++core_.metrics.replays;
  if (ended) {
    ++(commit.status == "completed" ? core_.metrics.workflows_completed : core_.metrics.workflows_failed);
    forget(claim.workflow_id);
    core_.ended.notify();
  } else if (*base == journal->next_seq) {
    // Nothing arrived in between: our events are the journal's tail, so keep the cache whole.
    int seq = *base;
    for (const auto& e : commit.events) {
      journal->apply({seq++, e["kind"].get<std::string>(), e.value("step", -1), e.value("name", ""), e["data"]});
    }
  }
  if (!commit.tasks.empty()) core_.task_work.notify();  // a local dispatcher may run them at once
}

}  // namespace durable::detail
