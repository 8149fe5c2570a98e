// Dispatcher's work on one claimed attempt: from its claim to its body's outcome committed,
// through lost leases, idempotency keys, heartbeats, retries and the horizon.
#include "pipeline/dispatcher.hpp"

#include <fmt/format.h>

#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "pg/activity_transaction.hpp"
#include "pipeline/attempt_state.hpp"

namespace durable::detail {

std::shared_ptr<AttemptState> Dispatcher::start_attempt(const pg::ClaimedTask& task) {
  auto state = std::make_shared<AttemptState>();
  state->workflow_id = task.workflow_id;
  state->activity_name = task.name;
  state->step = task.step;
  state->attempt = task.policy_attempt();
  state->last_heartbeat = task.last_heartbeat;
  state->set_deadline(AttemptState::Clock::now() + task.options.timeout);
  AttemptState* raw = state.get();  // the function lives inside the state: no ownership cycle
  state->heartbeat = [this, &task, raw](const Json& details) { return heartbeat(task, *raw, details); };
  std::lock_guard lock(running_mutex_);
  if (stopping_.load()) state->cancelled = true;  // shutdown began: tell_stopping() told the others
  running_[task.lease_token] = {task, state};
  return state;
}

void Dispatcher::run(const pg::ClaimedTask& task, SlotHold& hold) {
  const QueuePlace place(*this, task);  // given back whichever way this returns
  ++metrics_.claims;
  if (task.leased_at_once) ++metrics_.run_at_once;
  if (task.after_lease_expiry) ++metrics_.lease_expiries;
  failpoint("task.after_claim");
  try {
    const ActivityDefinition& def = registry_.activity(task.name);
    if (task.after_lease_expiry && !due_after_lost_lease(task, hold)) return;
    if (task.key_unknown) return block_attempt(task);
    if (!start_body(task, hold)) return;
    if (task.options.idempotency_key && !run_once_per_key(task, hold)) return;
    std::optional<pg::ActivityTransaction> transaction;  // a transactional activity's
    if (!open_transaction(def, task, transaction)) return;
    const std::shared_ptr<AttemptState> state = start_attempt(task);
    ActivityContext ctx(state);
    Json result;
    bool succeeded = false;
    ErrorInfo error;
    try {
      result = body_result(def, task, *state, ctx, transaction ? &*transaction : nullptr);
      hold.body_returned();  // its slot may run another body while this outcome commits
      succeeded = true;
    } catch (...) {
      hold.body_returned();
      error = current_error();
      if (transaction) transaction->roll_back();
      // A result that cannot be stored would be refused again on every attempt.
      if (!error.non_retryable && error.type == "durable::PayloadError") error.non_retryable = true;
    }
    bool key_held = false, discarded = false;
    {
      std::lock_guard lock(running_mutex_);
      auto it = running_.find(task.lease_token);  // only this thread takes its entry away
      key_held = it->second.key_held;
      discarded = it->second.handed_back || state->timed_out;  // its outcome is discarded
      if (state->timed_out) {
        --stuck_;
        logger().info("late outcome of timed-out activity '{}' (task {}, attempt {}) discarded", task.name,
                      task.task_id, task.attempt);
      }
      running_.erase(it);
    }
    bool settled = false;
    if (!discarded && !succeeded && stopping_.load()) {
      // It failed once shutdown had told it to stop (cancelled()): handed back like a body still
      // running when the grace ends, not a failed attempt.
      discarded = gave_up_at_shutdown(task);
    }
    if (!discarded) {
      failpoint("task.before_commit");
      if (succeeded && transaction) {
        try {
          settled = finish(task, true, result, {}, &hold, true, &*transaction);
        } catch (const pg::NotCommitted& e) {
          // Nothing of the attempt committed, its writes neither; when another body took the
          // transaction they shared down, the task is handed back, its attempt not counted.
          settled = e.handed_back ? hand_back(task) : settle_failure(task, e.error, &hold);
        }
      } else if (succeeded) {
        settled = finish(task, true, result, {}, &hold);
      } else {
        settled = settle_failure(task, error, &hold);
      }
    }
    // The body has returned: a commit or a retry let go of its key, unless the key was held past
    // its task; otherwise it is let go of here, and whoever waits for it woken.
    if (task.options.idempotency_key && (key_held || !settled)) release_key(task);
    // A cancelled task's body held its queue's place until now.
    if (!settled && task.options.queue != default_queue) release_place(task);
  } catch (const std::exception& e) {
    // The outcome could not be committed; the lease runs out and the attempt is retried.
    logger().warn("activity '{}' (task {}) could not be settled: {}", task.name, task.task_id, e.what());
  }
}

// Runs the body and checks its result (a transactional body's before its turn on the shared
// session ends: once the next body has written after it, it cannot be rolled back alone).
Json Dispatcher::body_result(const ActivityDefinition& def, const pg::ClaimedTask& task, const AttemptState& state,
                             ActivityContext& ctx, pg::ActivityTransaction* transaction) {
  if (!task.undecodable.empty()) throw CodecError(task.undecodable);
  if (!def.transactional()) {
    Json result = def.run(ctx, task.input);
    check_payload(result, fmt::format("the result of activity '{}'", task.name));
    return result;
  }
  if (!transactions_) throw Error("this engine runs no transactional activities");
  return transaction->run_body(def, ctx, task.input, [&](const Json& r) {
    check_payload(r, fmt::format("the result of activity '{}'", task.name));
    // Timed out as it returned: rolled back alone (its outcome is discarded by the caller).
    if (state.timed_out) throw ActivityTimeout("its attempt timed out");
  });
}

// Another engine's codec may know the key: the attempt waits for one (the run marked blocked, as
// for a journal that does not decode), never failed by this one.
void Dispatcher::block_attempt(const pg::ClaimedTask& task) {
  const std::string message =
      fmt::format("activity '{}' (step {}) cannot run on this engine: {}", task.name, task.step, task.undecodable);
  const Json reason = {{"step", task.step}, {"journaled", ""}, {"asked", ""}, {"message", message}};
  if (store_.block_task(task, reason, settings_.poll_interval) == 1) {
    logger().warn(
        "workflow '{}' (run {}) is blocked, not failed, until an engine whose codec decodes its activity's input "
        "takes it on (EngineOptions::codec; this engine tries it again now and then): {}",
        task.workflow_id, task.run_id, message);
  }
}

// Opens a transactional activity's transaction (none for others) before its attempt starts. No session that takes
// writes (a failover, a server set read-only) is no failure of the body: the task is handed back,
// its attempt not counted, and false returned.
bool Dispatcher::open_transaction(const ActivityDefinition& def, const pg::ClaimedTask& task,
                                  std::optional<pg::ActivityTransaction>& transaction) {
  if (!def.transactional() || !transactions_ || !task.undecodable.empty()) return true;  // none to open
  try {
    transaction.emplace(transactions_->connections, transactions_->store, task);
    return true;
  } catch (const DatabaseUnavailable& e) {
    logger().warn("activity '{}' (task {}) handed back: {}", task.name, task.task_id, e.what());
    store_.release_task(task, Duration{0});
    return false;
  }
}

bool Dispatcher::hand_back(const pg::ClaimedTask& task) {
  logger().debug("activity '{}' (task {}) handed back: the transaction it shared failed", task.name, task.task_id);
  store_.release_task(task, Duration{0});
  claimable_in(Duration{0});  // a release sends no NOTIFY
  return false;
}

// Takes a body slot: at once for a claimed task, after a wait of at most the bodies ahead of
// it for a task a continuing workflow leased at once. A wait that used up half the lease's
// margin renews the lease first (the body's timeout counts from now), and a lease lost
// meanwhile (taken over elsewhere) runs nothing here. False: nothing to run.
bool Dispatcher::start_body(const pg::ClaimedTask& task, SlotHold& hold) {
  const auto asked = std::chrono::steady_clock::now();
  if (!hold.start_body()) {  // stopping while it waited for a body slot: hand it back
    store_.release_task(task, Duration{0});
    return false;
  }
  if (std::chrono::steady_clock::now() - asked < settings_.lease_margin / 2) return true;
  if (store_.heartbeat(task, task.options.timeout + settings_.lease_margin, "") == pg::HeartbeatOutcome::kept) {
    return true;
  }
  logger().info("activity '{}' (task {}) lost its lease while it waited for a slot; not run here", task.name,
                task.task_id);
  return false;
}

// A lost lease (a crashed, frozen or cut-off worker) is a failed attempt like any other: the
// next attempt waits the policy's delay after the lease ran out, within attempts and horizon.
// True when this attempt may run now; otherwise the task failed for good or was handed back
// until it is due (the attempt not counted: the lost one was, by the claim).
bool Dispatcher::due_after_lost_lease(const pg::ClaimedTask& task, SlotHold& hold) {
  constexpr const char* lost = "the worker running attempt {} stopped renewing its lease (crashed, hung or cut off)";
  const RetryPolicy& retry = task.options.retry;
  const auto& listed = retry.non_retryable_errors;
  const bool retryable = std::find(listed.begin(), listed.end(), error_info(LeaseExpired("")).type) == listed.end();
  if (task.policy_attempt() > retry.max_attempts || !retryable) {
    finish(task, false, {}, error_info(LeaseExpired(fmt::format(lost, task.attempt - 1))), &hold, false);
    return false;
  }
  using us = std::chrono::microseconds;
  const std::int64_t due_us =
      task.lease_lost_at_us +
      std::chrono::duration_cast<us>(jittered(retry, retry.delay_after(task.policy_attempt() - 1))).count();
  if (due_us > task.first_started_at_us + std::chrono::duration_cast<us>(retry.max_retry_horizon).count()) {
    horizon_cut(task);
    finish(task, false, {},
           error_info(LeaseExpired(fmt::format("{} (not retried: the next attempt would start past max_retry_horizon "
                                               "of {} ms)",
                                               fmt::format(lost, task.attempt - 1), retry.max_retry_horizon.count()))),
           &hold, false);
    return false;
  }
  if (due_us <= task.claimed_at_us) return true;
  const auto wait = std::chrono::ceil<Duration>(us{due_us - task.claimed_at_us});
  logger().debug("activity '{}' (task {}): attempt {} waits {} ms after its lost lease, as its policy says", task.name,
                 task.task_id, task.attempt, wait.count());
  store_.release_task(task, wait);
  claimable_in(wait);
  return false;
}

// For a keyed task: true when this attempt should run the body. Otherwise the task was
// settled with the committed result of an earlier task with the same key, or handed back to
// wait while another attempt with the same key runs (so at most one body runs at a time), until
// the holder lets go of the key (which wakes it) or its lease runs out (it crashed).
bool Dispatcher::run_once_per_key(const pg::ClaimedTask& task, SlotHold& hold) {
  auto reused = store_.reusable_result(task);  // a committed result needs no lock
  if (!reused) {
    if (!store_.lock_key_or_wait(task)) return false;
    reused = store_.reusable_result(task);  // committed while we took the lock
  }
  if (!reused) return true;
  if (!reused->same_input) {
    ++metrics_.idempotency_input_mismatches;
    logger().warn(
        "activity '{}' (workflow '{}'): idempotency key reused with another input than the one that "
        "produced its result (in workflow '{}')",
        task.name, task.workflow_id, reused->workflow_id);
    if (settings_.idempotency_input_mismatch_fails) {
      finish(task, false, {},
             error_info(IdempotencyKeyConflict(
                 fmt::format("the idempotency key of activity '{}' was used before with another input (in workflow "
                             "'{}'); use a key that identifies the input",
                             task.name, reused->workflow_id))),
             &hold);
      return false;
    }
  }
  logger().debug("activity '{}' (task {}): reusing the result committed for its idempotency key", task.name,
                 task.task_id);
  if (!finish(task, true, reused->result, {}, &hold)) release_key(task);  // the lock we took, if any
  return false;
}

bool Dispatcher::heartbeat(const pg::ClaimedTask& task, AttemptState& state, const Json& details) {
  if (state.timed_out) return false;
  check_payload(details, fmt::format("the heartbeat details of activity '{}'", task.name));
  const std::string text = details.is_null() ? std::string() : details.dump();
  if (text.size() > max_heartbeat_details_bytes) {
    throw InvalidArgument(
        fmt::format("heartbeat details of activity '{}' are {} bytes as JSON; the limit is {} "
                    "bytes: keep a cursor or an offset, not the data itself",
                    task.name, text.size(), max_heartbeat_details_bytes));
  }
  switch (store_.heartbeat(task, task.options.timeout + settings_.lease_margin, text)) {
    case pg::HeartbeatOutcome::kept:
      state.set_deadline(AttemptState::Clock::now() + task.options.timeout);
      return !state.timed_out;
    case pg::HeartbeatOutcome::cancelled: state.cancelled = true; return false;
    case pg::HeartbeatOutcome::lease_lost: return false;
  }
  return false;
}

void Dispatcher::horizon_cut(const pg::ClaimedTask& task) {
  // Validation bounds only the policy's own worst case; what it cannot know (waits for a slot, a
  // key or an engine, lost leases) used the rest. Said out loud: the policy allowed more attempts.
  logger().warn(
      "activity '{}' (workflow '{}', task {}) fails after attempt {} of {}: the next would start past its "
      "max_retry_horizon of {} ms, counted from its first attempt's start (time spent waiting for a slot, a key or "
      "an engine, and lost leases, count toward it)",
      task.name, task.workflow_id, task.task_id, task.policy_attempt(), task.options.retry.max_attempts,
      task.options.retry.max_retry_horizon.count());
}

Duration Dispatcher::jittered(const RetryPolicy& policy, Duration delay) {
  return policy.jitter <= 0.0 ? delay : uniform(delay, policy.with_max_jitter(delay));
}

Duration Dispatcher::uniform(Duration low, Duration high) {
  std::lock_guard lock(random_mutex_);
  return Duration{std::uniform_int_distribution<Duration::rep>(low.count(), std::max(low, high).count())(random_)};
}

bool Dispatcher::settle_failure(const pg::ClaimedTask& task, const ErrorInfo& error, SlotHold* hold) {
  const RetryPolicy& retry = task.options.retry;
  const auto& listed = retry.non_retryable_errors;
  const bool retryable = !error.non_retryable && std::find(listed.begin(), listed.end(), error.type) == listed.end();
  if (retryable && task.policy_attempt() < retry.max_attempts) {
    const Duration delay = jittered(retry, retry.delay_after(task.policy_attempt()));
    switch (store_.retry_task(task, delay, error.type, error.message)) {
      case pg::RetryOutcome::retried:
        ++metrics_.retries;
        claimable_in(delay);
        return true;
      case pg::RetryOutcome::fenced_off:
        logger().info(
            "late failure of activity '{}' (task {}, attempt {}) discarded: its lease was lost or its run ended",
            task.name, task.task_id, task.attempt);
        return false;
      case pg::RetryOutcome::past_horizon:
        horizon_cut(task);
        return finish(task, false, {},
                      {error.type, fmt::format("{} (not retried: the next attempt would start past max_retry_horizon "
                                               "of {} ms)",
                                               error.message, retry.max_retry_horizon.count())},
                      hold);
    }
  }
  return finish(task, false, {}, error, hold);
}

bool Dispatcher::finish(const pg::ClaimedTask& task, bool succeeded, const Json& result, const ErrorInfo& error,
                        SlotHold* hold, bool record_attempt, pg::ActivityTransaction* transaction) {
  // When its workflow continued in place, the tasks that commit leased to this engine run on the
  // slots the replay reserved (this step's own first).
  Committed committed = outcomes_.commit({task, succeeded, result, error, record_attempt}, hold, transaction);
  if (committed.continued) slots_.launch(std::move(committed.step.claimed), std::move(*committed.continued));
  switch (committed.step.finish) {
    case pg::FinishOutcome::committed:
    case pg::FinishOutcome::committed_earlier:
      failpoint("task.after_commit");
      ++(succeeded ? metrics_.completions : metrics_.failures);
      // Unless it went on already, the workflow is runnable: a local runner can pick it up at once.
      if (!committed.step.continued) signals_.workflow_work.notify_one();
      return true;
    case pg::FinishOutcome::fenced_off:
      logger().info(
          "late outcome of activity '{}' (task {}, attempt {}) discarded: its lease was lost or its run ended",
          task.name, task.task_id, task.attempt);
      return false;
  }
  return false;
}

}  // namespace durable::detail
