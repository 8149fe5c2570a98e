#include "dispatch/dispatcher.hpp"

#include "log.hpp"

#include "attempt_state.hpp"
#include "engine_core.hpp"
#include "exceptions.hpp"

namespace durable::detail {

Dispatcher::Dispatcher(EngineCore& core)
    : core_(core),
      names_json_(core.registry.activity_names_json()),
      pool_(core.options.activity_max_concurrency, [&core] { core.task_work.notify(); }) {}

Dispatcher::~Dispatcher() { pool_.shutdown(); }

void Dispatcher::loop() {
  while (!core_.stopping()) {
    const auto seen = core_.task_work.generation();
    const int free = pool_.free_slots();
    std::size_t claimed = 0;
    if (free > 0) {
      try {
        auto tasks = core_.store.claim_tasks(names_json_, free, core_.owner(), core_.options.lease_margin);
        claimed = tasks.size();
        for (auto& task : tasks) {
          pool_.submit([this, task = std::move(task)] { run(task); });
        }
      } catch (const std::exception& e) {
        detail::logger().warn("claiming activity tasks failed: {}", e.what());
      }
    }
    // A full batch means more may be waiting: claim again at once if slots are free.
    if (free > 0 && claimed == static_cast<std::size_t>(free)) continue;
    // Idle or saturated: wait for a NOTIFY, a freed slot or the poll interval, with jitter
    // so many engines do not poll in lockstep.
    const auto poll = core_.options.poll_interval;
    const auto spread = std::uniform_int_distribution<long>(0, poll.count() / 4 + 1)(jitter_);
    core_.task_work.wait_for(seen, poll + std::chrono::milliseconds{spread});
  }
}

void Dispatcher::run(const pg::ClaimedTask& task) {
  try {
    const ActivityDefinition& def = core_.registry.activity(task.name);
    if (task.after_lease_expiry && task.attempt > task.options.retry.max_attempts) {
      // The lost attempt was the last one: the task fails without running again.
      settle(task, false, {}, "durable::LeaseExpired",
             "the worker running the last attempt stopped renewing its lease (crashed, hung or cut off)");
      return;
    }
    auto state = std::make_shared<AttemptState>();
    state->workflow_id = task.workflow_id;
    state->activity_name = task.name;
    state->step = task.step;
    state->attempt = task.attempt;
    state->deadline = std::chrono::steady_clock::now() + task.options.timeout;
    {
      std::lock_guard lock(running_mutex_);
      running_[task.task_id] = {task, state};
    }
    ActivityContext ctx(state);
    Json result;
    bool succeeded = false;
    ErrorInfo error;
    try {
      result = def.run(ctx, task.input);
      succeeded = true;
    } catch (...) {
      error = current_error();
    }
    bool handed_back = false;
    {
      std::lock_guard lock(running_mutex_);
      handed_back = running_.erase(task.task_id) == 0;
    }
    if (handed_back) return;  // released at shutdown; its lease is gone, so its outcome would be fenced off
    settle(task, succeeded, result, error.type, error.message);
  } catch (const std::exception& e) {
    // The outcome could not be committed; the lease runs out and the attempt is retried.
    detail::logger().warn("activity '{}' (task {}) could not be settled: {}", task.name, task.task_id, e.what());
  }
}

void Dispatcher::settle(const pg::ClaimedTask& task, bool succeeded, const Json& result, const std::string& error_type,
                        const std::string& error_message) {
  const auto& retry = task.options.retry;
  if (!succeeded && task.attempt < retry.max_attempts) {
    if (!core_.store.retry_task(task, retry.delay_after(task.attempt), error_type, error_message)) {
      detail::logger().info("late failure of activity '{}' (task {}, attempt {}) discarded: its lease was lost",
                   task.name, task.task_id, task.attempt);
    }
    return;
  }
  const bool record = !(task.after_lease_expiry && task.attempt > retry.max_attempts);
  switch (core_.store.finish_task(task, succeeded, result, error_type, error_message, record)) {
    case pg::FinishOutcome::committed:
    case pg::FinishOutcome::committed_earlier:
      core_.workflow_work.notify();  // the workflow is runnable: a local runner can pick it up at once
      break;
    case pg::FinishOutcome::fenced_off:
      detail::logger().info("late outcome of activity '{}' (task {}, attempt {}) discarded: its lease was lost",
                   task.name, task.task_id, task.attempt);
      break;
  }
}

void Dispatcher::drain(std::chrono::milliseconds grace) {
  if (!pool_.wait_idle(grace)) {
    std::map<std::int64_t, Running> left;
    {
      std::lock_guard lock(running_mutex_);
      left.swap(running_);
    }
    for (auto& [id, r] : left) {
      r.state->cancelled = true;
      try {
        core_.store.release_task(r.task);
        detail::logger().info("handed back activity '{}' (task {}) at shutdown", r.task.name, id);
      } catch (const std::exception& e) {
        detail::logger().warn("could not hand back task {} ({}); its lease will expire", id, e.what());
      }
    }
  }
  pool_.shutdown();  // bodies still running are waited for; their outcomes are discarded
}

}  // namespace durable::detail
