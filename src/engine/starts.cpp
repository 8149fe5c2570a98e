#include "engine/starts.hpp"

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/checks.hpp"
#include "base/log.hpp"
#include "base/uuid.hpp"
#include "engine/engine_access.hpp"
#include "engine/engine_core.hpp"
#include "pipeline/runner.hpp"

namespace durable::detail {

namespace {

// The statuses of an earlier run that a policy lets a new run replace (JSON, for the statement).
std::string replaceable(IdReusePolicy policy) {
  using journal::RunStatus;
  std::vector<RunStatus> statuses;
  switch (policy) {
    case IdReusePolicy::reject_duplicate: break;
    case IdReusePolicy::allow_if_failed: statuses = {RunStatus::failed, RunStatus::cancelled}; break;
    case IdReusePolicy::allow_if_ended:
      statuses = {RunStatus::completed, RunStatus::failed, RunStatus::cancelled};
      break;
  }
  Json texts = Json::array();
  for (RunStatus status : statuses) texts.push_back(to_text(status));
  return texts.dump();
}

StartAttempt found(const std::shared_ptr<EngineCore>& core, const pg::FoundRun& run) {
  StartAttempt attempt{EngineAccess::handle(core, run.workflow_id, run.run_id)};
  attempt.existing_status = run.status;
  return attempt;
}

// The id was free, yet nothing went in: a running run holds the deduplication key, or a queued
// run took the debounce key between our look and our insert.
StartAttempt held_back(const std::shared_ptr<EngineCore>& core, const std::string& workflow_name,
                       const std::string& workflow_id, const Json& input, const pg::RunOrigin& placed) {
  if (!placed.deduplication_key.empty()) {
    if (auto holder = core->store().deduplicated_run(placed.queue, placed.deduplication_key)) {
      auto attempt = found(core, *holder);
      attempt.duplicate = true;
      return attempt;
    }
  }
  if (!placed.debounce_key.empty()) {
    if (auto into = core->store().debounce_into(workflow_name, input, placed)) {
      auto attempt = found(core, *into);
      attempt.debounced = true;
      return attempt;
    }
  }
  throw DatabaseError(
      fmt::format("workflow '{}' was not started, and no run holds its id or keys; try again", workflow_id));
}

}  // namespace

StartAttempt try_start(const std::shared_ptr<EngineCore>& core, const std::string& workflow_name,
                       const std::string& workflow_id, const Json& input, const StartOptions& options,
                       const pg::RunOrigin& origin) {
  check_workflow_id(workflow_id);
  check_payload(input, fmt::format("the input of workflow '{}'", workflow_id));  // before converting it
  core->registry().workflow(workflow_name).check_input(input);
  const pg::RunOrigin placed = core->placed(origin, options);
  if (!placed.debounce_key.empty()) {
    if (auto into = core->store().debounce_into(workflow_name, input, placed)) {
      auto attempt = found(core, *into);
      attempt.debounced = true;
      return attempt;
    }
  }
  const std::string run_id = time_ordered_uuid();
  // A running engine that runs this workflow leases the new run to itself and replays it at
  // once, without a claim (another engine takes it over if this one dies before). A run on a
  // named queue waits for its admission instead, and a run of a paused type for a claim.
  // Held while this start uses the runner (read again under the hold): stop() waits for it. Taken
  // only while there is a runner, so that starts after stop() began do not keep stop() waiting.
  std::shared_lock<std::shared_mutex> runner_held;
  Runner* runner = nullptr;
  if (core->local_runner() && core->runs_default_queue() && placed.queue == default_queue &&
      !core->paused_types().workflow_paused(workflow_name)) {
    runner_held = core->hold_local_runner();
    runner = core->local_runner();
  }
  const std::string owner = runner ? core->owner() : std::string();
  // Its first replay too, in the start's one statement: the start and its first step are one
  // commit. Not with a deduplication key: a replay that ends the run would insert it ended, where
  // the key's index (running runs) does not see it.
  std::unique_ptr<StartReplay> first =
      runner && placed.deduplication_key.empty() && placed.debounce_key.empty() ? runner->first_replay() : nullptr;
  pg::FirstReplay* const planner = first.get();
  auto fresh = core->store().start_workflow(workflow_id, run_id, workflow_name, input, placed, owner,
                                            core->options().workflow_lease, planner);
  if (!fresh.inserted && options.id_reuse != IdReusePolicy::reject_duplicate) {
    fresh =
        core->store().reuse_workflow_id(workflow_id, run_id, workflow_name, input, placed,
                                        replaceable(options.id_reuse), owner, core->options().workflow_lease, planner);
  }
  if (!fresh.inserted) {
    auto existing = core->store().read_workflow(workflow_id);
    if (!existing) return held_back(core, workflow_name, workflow_id, input, placed);
    // Our own run, committed by an earlier try whose answer was lost, is not a duplicate.
    if (existing->run_id != run_id) {
      return found(core, {workflow_id, existing->run_id, std::string(to_text(existing->status))});
    }
  }
  if (first && (fresh.leased || fresh.replayed)) {
    first->started(*runner, std::move(fresh.leased), std::move(fresh.replayed));
  } else {
    core->signals().workflow_work.notify_one();
    core->signals().queue_work.notify();
  }
  logger().debug("started workflow '{}' ({}) run {}", workflow_id, workflow_name, run_id);
  return {EngineAccess::handle(core, workflow_id, run_id), true};
}

}  // namespace durable::detail
