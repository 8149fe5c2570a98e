#include "pipeline/dispatcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "pipeline/attempt_state.hpp"

namespace durable::detail {

Dispatcher::Dispatcher(DispatcherSettings settings, int capacity, const Registry& registry, const PausedTypes& paused,
                       pg::TaskStore& store, OutcomeCommitter& outcomes, MetricsRecorder& metrics,
                       EngineSignals& signals, const std::atomic<bool>& stopping, const TransactionSource* transactions)
    : settings_(std::move(settings)),
      registry_(registry),
      store_(store),
      outcomes_(outcomes),
      metrics_(metrics),
      signals_(signals),
      stopping_(stopping),
      transactions_(transactions ? std::optional<TransactionSource>(*transactions) : std::nullopt),
      paused_(paused),
      queues_json_(Json(settings_.queues).dump()),
      slots_(
          capacity, [this](const pg::ClaimedTask& task, SlotHold& hold) { run(task, hold); },
          [this] {
            if (!drained_.load()) signals_.task_work.notify();  // else the claim it would send finds nothing
          }) {
  if (registry_.activities.empty()) return;
  for (const auto& queue : settings_.queues) {
    if (queue != default_queue) named_queues_.push_back(queue);
  }
}

Dispatcher::~Dispatcher() {
  slots_.shutdown();
  stop_watching();
}

void Dispatcher::start_watching() {
  watching_ = true;
  watcher_ = std::thread([this] { watch(); });
}

void Dispatcher::stop_watching() {
  watching_ = false;
  if (watcher_.joinable()) watcher_.join();
}

void Dispatcher::tell_stopping() {
  std::lock_guard lock(running_mutex_);
  for (auto& [token, r] : running_) r.state->cancelled = true;
}

bool Dispatcher::gave_up_at_shutdown(const pg::ClaimedTask& task) {
  try {
    store_.release_task(task, Duration{0});
  } catch (const std::exception& e) {
    logger().warn("could not hand back task {} ({}); its lease will expire", task.task_id, e.what());
    return false;
  }
  logger().info("activity '{}' (task {}) gave up as the engine stops: handed back, the attempt not counted", task.name,
                task.task_id);
  return true;
}

void Dispatcher::loop() {
  // While saturated, the dispatcher only looks at its own slots, each look further apart (up to
  // the poll interval) and jittered, so engines that saturate together do not wake together.
  const Duration first_backoff = std::min<Duration>(std::chrono::milliseconds{10}, settings_.poll_interval);
  Duration backoff = first_backoff;
  bool saturated = false;
  // After a claim that found nothing, the next one probes with one slot and leaves the others to
  // replays that lease their tasks at once meanwhile; a probe that finds work claims in full next.
  bool probe = true;
  while (!stopping_.load()) {
    const auto seen = signals_.task_work.generation();
    Reservation slots = slots_.reserve(probe ? 1 : slots_.size());
    const int free = slots.count();
    if (free == 0) {
      drained_ = false;  // tasks may wait for a slot: a freed one claims
      ++metrics_.rejected_claims;
      if (!saturated) {
        saturated = true;
        logger().debug("dispatcher saturated: instance={} capacity={} stuck={}", settings_.instance, slots_.size(),
                       stuck_slots());
      }
      signals_.task_work.wait_for(seen, uniform(backoff / 2, backoff));
      backoff = std::min<Duration>(backoff * 2, settings_.poll_interval);
      continue;
    }
    if (saturated) {
      saturated = false;
      backoff = first_backoff;
      logger().debug("dispatcher has free slots again: instance={} free={}", settings_.instance, free);
    }
    std::optional<Duration> retry_in;
    std::vector<pg::ClaimedTask> tasks = claim(free, retry_in);
    const std::size_t claimed = tasks.size();
    probe = claimed == 0;
    drained_ = claimed < static_cast<std::size_t>(free);
    slots_.launch(std::move(tasks), std::move(slots), ActivitySlots::Unused::keep_quiet);
    // A full batch means more may be waiting: claim again at once if slots are free.
    if (claimed == static_cast<std::size_t>(free)) continue;
    // Idle: wait for a NOTIFY, a freed slot or the poll interval, jittered; or until a named
    // queue's full rate window frees a place.
    const auto poll = settings_.poll_interval;
    signals_.task_work.wait_for(
        seen, until_due(std::min(uniform(poll, poll + poll / 4), retry_in.value_or(poll + poll / 4))));
  }
}

void Dispatcher::claimable_in(Duration delay) {
  if (delay > Duration{0}) {
    const std::lock_guard lock(due_mutex_);
    const auto at = std::chrono::steady_clock::now() + delay;
    if (!due_ || at < *due_) due_ = at;
  } else {
    drained_ = false;
  }
  signals_.task_work.notify();  // the loop claims it now, or sleeps no longer than until it is due
}

Duration Dispatcher::until_due(Duration wait) {
  const std::lock_guard lock(due_mutex_);
  if (!due_) return wait;
  const auto now = std::chrono::steady_clock::now();
  if (*due_ <= now) {
    due_.reset();  // due now: this claim takes it
    return Duration{0};
  }
  return std::min(wait, std::chrono::ceil<Duration>(*due_ - now));
}

std::vector<pg::ClaimedTask> Dispatcher::claim(int free, std::optional<Duration>& retry_in) {
  std::vector<pg::ClaimedTask> tasks;
  const auto started = std::chrono::steady_clock::now();
  const auto names = paused_.activity_names_json();
  failpoint("dispatcher.before_claim");  // the names are read, the claims not sent: a pause may come between
  named_first_ = !named_first_;
  if (named_first_) claim_named(tasks, *names, free, retry_in);
  const int left = free - static_cast<int>(tasks.size());
  if (left > 0) {
    try {
      auto more = store_.claim_tasks(*names, queues_json_, left, settings_.owner, settings_.lease_margin);
      std::move(more.begin(), more.end(), std::back_inserter(tasks));
    } catch (const std::exception& e) {
      logger().warn("claiming activity tasks failed: instance={} error={}", settings_.instance, e.what());
    }
  }
  if (!named_first_) claim_named(tasks, *names, free, retry_in);
  if (!tasks.empty()) metrics_.claim_latency.observe(std::chrono::steady_clock::now() - started);
  give_back_paused(tasks);
  return tasks;
}

void Dispatcher::give_back_paused(std::vector<pg::ClaimedTask>& tasks) {
  std::erase_if(tasks, [&](const pg::ClaimedTask& task) {
    if (!paused_.activity_paused(task.name)) return false;
    const QueuePlace place(*this, task);  // its place in the engine's bound, given back as it goes
    try {
      store_.release_task(task, Duration{0});
    } catch (const std::exception& e) {
      logger().warn("could not hand back task {} of paused activity '{}' ({}); its lease will expire", task.task_id,
                    task.name, e.what());
    }
    return true;
  });
}

void Dispatcher::claim_named(std::vector<pg::ClaimedTask>& tasks, const std::string& names_json, int free,
                             std::optional<Duration>& retry_in) {
  // Each call starts at the next queue, so a busy queue does not keep the slots from the others.
  for (std::size_t i = 0; i < named_queues_.size(); ++i) {
    const int left = free - static_cast<int>(tasks.size());
    if (left <= 0) return;
    const auto& queue = named_queues_[(next_named_ + i) % named_queues_.size()];
    const int room = free_places(queue, left);
    if (room <= 0) continue;
    try {
      auto claim = store_.claim_queued_tasks(queue, names_json, room, settings_.owner, settings_.lease_margin);
      take_places(queue, static_cast<int>(claim.tasks.size()));
      std::move(claim.tasks.begin(), claim.tasks.end(), std::back_inserter(tasks));
      if (claim.retry_in) retry_in = std::min(retry_in.value_or(*claim.retry_in), *claim.retry_in);
    } catch (const std::exception& e) {
      logger().warn("claiming the activity tasks of queue '{}' failed: instance={} error={}", queue, settings_.instance,
                    e.what());
    }
  }
  if (!named_queues_.empty()) next_named_ = (next_named_ + 1) % named_queues_.size();
}

int Dispatcher::free_places(const std::string& queue, int wanted) {
  auto limit = settings_.queue_limits.find(queue);
  if (limit == settings_.queue_limits.end()) return wanted;
  std::lock_guard lock(places_mutex_);
  return std::min(wanted, limit->second - places_taken_[queue]);
}

void Dispatcher::take_places(const std::string& queue, int count) {
  if (count == 0 || !settings_.queue_limits.count(queue)) return;
  std::lock_guard lock(places_mutex_);
  places_taken_[queue] += count;
}

Dispatcher::QueuePlace::QueuePlace(Dispatcher& d, const pg::ClaimedTask& task)
    : dispatcher(d), queue(d.settings_.queue_limits.count(task.options.queue) ? &task.options.queue : nullptr) {}

Dispatcher::QueuePlace::~QueuePlace() {
  if (!queue) return;
  {
    std::lock_guard lock(dispatcher.places_mutex_);
    --dispatcher.places_taken_[*queue];
  }
  dispatcher.signals_.task_work.notify();  // the queue may have an attempt waiting for this place
}

int Dispatcher::stuck_slots() const {
  std::lock_guard lock(running_mutex_);
  return stuck_;
}

void Dispatcher::watch() {
  // Bodies that never heartbeat still see cancelled() turn true within this (plus a query), and
  // the keys of bodies whose tasks let go of them are held again within it.
  constexpr auto running_check_interval = std::chrono::milliseconds{500};
  auto next_running_check = AttemptState::Clock::now() + running_check_interval;
  // Also while the engine stops: timeouts hold during the shutdown grace, and keys stay held
  // until the bodies still running have returned (drain() stops it after them).
  while (watching_.load()) {
    std::vector<Running> expired;
    {
      std::lock_guard lock(running_mutex_);
      const auto now = AttemptState::Clock::now();
      for (auto& [id, r] : running_) {
        if (!r.state->timed_out && !r.handed_back && r.state->deadline_point() <= now) {
          r.state->timed_out = true;  // its body keeps the slot until it returns; its outcome is discarded
          ++stuck_;
          ++metrics_.timeouts;
          hold_key(r);
          expired.push_back(r);
        }
      }
    }
    hold_keys(expired);  // the bodies run on: their keys stay held past the failures that let their tasks go
    for (const auto& r : expired) {
      const auto timeout = r.task.options.timeout.count();
      logger().warn("activity '{}' (task {}, attempt {}) passed its {} ms timeout; failing the attempt", r.task.name,
                    r.task.task_id, r.task.attempt, timeout);
      try {
        settle_failure(r.task,
                       error_info(ActivityTimeout(
                           fmt::format("attempt {} ran past its timeout of {} ms", r.task.attempt, timeout))),
                       nullptr);
      } catch (const std::exception& e) {
        logger().warn("could not fail timed-out task {} ({}); its lease will expire", r.task.task_id, e.what());
      }
    }
    if (AttemptState::Clock::now() >= next_running_check) {
      tell_unwanted();
      renew_held_keys();
      next_running_check = AttemptState::Clock::now() + running_check_interval;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

void Dispatcher::hold_key(Running& r) {
  if (r.task.options.idempotency_key) r.key_held = true;
}

void Dispatcher::tell_unwanted() {
  std::vector<std::int64_t> ids;
  {
    std::lock_guard lock(running_mutex_);
    for (const auto& [token, r] : running_) {
      if (!r.state->cancelled) ids.push_back(r.task.task_id);
    }
  }
  if (ids.empty()) return;
  std::vector<std::int64_t> unwanted;
  try {
    unwanted = store_.unwanted_tasks(ids);
  } catch (const std::exception& e) {
    logger().debug("could not check whether running tasks are still wanted ({}); trying again", e.what());
    return;
  }
  if (unwanted.empty()) return;
  std::lock_guard lock(running_mutex_);
  for (auto& [token, r] : running_) {
    if (std::find(unwanted.begin(), unwanted.end(), r.task.task_id) == unwanted.end()) continue;
    r.state->cancelled = true;
    hold_key(r);  // held by the dropped task's lease until now; renew_held_keys() holds it from here
  }
}

void Dispatcher::renew_held_keys() {
  std::vector<Running> held;
  {
    std::lock_guard lock(running_mutex_);
    for (const auto& [token, r] : running_) {
      if (r.key_held) held.push_back(r);
    }
  }
  hold_keys(held);
}

void Dispatcher::hold_keys(const std::vector<Running>& attempts) {
  std::vector<const pg::ClaimedTask*> tasks;
  for (const auto& r : attempts) {
    if (r.key_held) tasks.push_back(&r.task);
  }
  try {
    store_.hold_keys(tasks, settings_.lease_margin);
  } catch (const std::exception& e) {
    // Until the holds are renewed, their tasks' leases (or the last holds) still keep the keys.
    logger().warn("could not hold the idempotency keys of {} running bodies ({}); trying again", tasks.size(),
                  e.what());
  }
}

void Dispatcher::release_key(const pg::ClaimedTask& task) {
  try {
    store_.release_keys({&task});
  } catch (const std::exception& e) {
    logger().warn("could not let go of the idempotency key of task {} ({}); its hold runs out", task.task_id, e.what());
  }
}

void Dispatcher::release_place(const pg::ClaimedTask& task) {
  try {
    store_.release_place(task);
  } catch (const std::exception& e) {
    logger().warn("could not free the queue place of task {} ({}); its lease runs out", task.task_id, e.what());
  }
}

void Dispatcher::drain(std::chrono::milliseconds grace) {
  slots_.close();  // tasks still waiting for a body slot hand themselves back
  if (!slots_.wait_idle(grace)) {
    std::vector<Running> left;
    {
      std::lock_guard lock(running_mutex_);
      for (auto& [token, r] : running_) {
        if (r.state->timed_out || r.handed_back) continue;  // already failed; nothing to hand back
        r.handed_back = true;                               // its outcome, whenever it returns, is discarded
        hold_key(r);
        left.push_back(r);
      }
    }
    hold_keys(left);  // before their tasks let go of them
    for (const auto& r : left) {
      try {
        store_.release_task(r.task, Duration{0});
        logger().info("handed back activity '{}' (task {}) at shutdown", r.task.name, r.task.task_id);
      } catch (const std::exception& e) {
        logger().warn("could not hand back task {} ({}); its lease will expire", r.task.task_id, e.what());
      }
    }
  }
  slots_.shutdown();  // bodies still running are waited for; their outcomes are discarded
  stop_watching();    // every body has returned: no timeout left to enforce, no key left to hold
}

void Dispatcher::add_gauges(EngineMetrics& metrics) const {
  std::lock_guard lock(running_mutex_);
  metrics.activity_busy = slots_.running_bodies();
  metrics.activity_in_flight = slots_.in_flight();
  metrics.stuck_slots = stuck_;
}

}  // namespace durable::detail
