// Queues (durable/queues.hpp): the named queues' limits and what they hold, over pg::QueueStore.
#include "durable/queues.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "background/admission.hpp"
#include "base/checks.hpp"
#include "base/log.hpp"
#include "base/printable.hpp"
#include "engine/engine_core.hpp"
#include "pg/queue_store.hpp"

namespace durable {

namespace {

TimePoint time_of(std::int64_t us) { return TimePoint{std::chrono::microseconds{us}}; }

double seconds_since(const std::optional<std::int64_t>& us, std::int64_t now_us) {
  return us ? std::max<double>(0.0, static_cast<double>(now_us - *us) / 1e6) : 0.0;
}

QueueInfo info_of(pg::QueueRow row) {
  QueueInfo info;
  info.spec = std::move(row.spec);
  info.paused = row.paused;
  if (row.paused_at_us) info.paused_at = time_of(*row.paused_at_us);
  info.paused_by = std::move(row.paused_by);
  info.paused_reason = std::move(row.paused_reason);
  info.queued = row.queued;
  info.running = row.running;
  // A full queue holds back every queued run; else those whose key is at its limit wait.
  const bool full = info.spec.concurrency && row.running >= *info.spec.concurrency;
  info.throttled = full ? row.queued : row.key_throttled;
  info.oldest_queued_seconds = seconds_since(row.oldest_queued_us, row.now_us);
  info.activities_waiting = row.activities_waiting;
  info.activities_running = row.activities_running;
  return info;
}

void check_defined_name(const std::string& name) {
  detail::check_queue_name(name, "queue name");
  if (name == default_queue) {
    throw InvalidQueue("the default queue has no limits, pause or keys: it is not listed among the named queues");
  }
}

}  // namespace

Queues::Queues(std::shared_ptr<detail::EngineCore> core) : core_(std::move(core)) {}

void Queues::define(const QueueSpec& spec) {
  detail::check_queue_spec(spec);
  core_->queue_store().define(spec);
}

std::vector<QueueInfo> Queues::list() const {
  std::vector<QueueInfo> infos;
  for (auto& row : core_->queue_store().read()) infos.push_back(info_of(std::move(row)));
  return infos;
}

QueueInfo Queues::get(const std::string& name) const {
  check_defined_name(name);
  auto rows = core_->queue_store().read(name);
  if (rows.empty())
    throw UnknownQueue(fmt::format("queue '{}' is not defined (Queues::list shows those that are)", name));
  return info_of(std::move(rows.front()));
}

std::vector<QueueKeyInfo> Queues::keys(const std::string& name, int limit) const {
  if (limit < 1 || limit > 1000) {
    throw InvalidArgument(fmt::format("Queues::keys: limit {} is out of range: ask for 1 to 1000 keys", limit));
  }
  (void)get(name);  // throws for a queue that is not defined
  std::vector<QueueKeyInfo> keys;
  for (const auto& row : core_->queue_store().keys(name, limit)) {
    keys.push_back({row.key, row.queued, row.running, seconds_since(row.oldest_queued_us, row.now_us)});
  }
  return keys;
}

void Queues::pause(const std::string& name, const OperatorAction& action) {
  check_defined_name(name);
  detail::check_action(action);
  if (!core_->queue_store().set_paused(name, true, action)) {
    throw UnknownQueue(fmt::format("queue '{}' is not defined: there is nothing to pause", name));
  }
  detail::logger().info("queue '{}' paused by '{}': {}", name, action.actor,
                        detail::loggable(action.reason, core_->options().codec != nullptr));
}

void Queues::resume(const std::string& name, const OperatorAction& action) {
  check_defined_name(name);
  detail::check_action(action);
  if (!core_->queue_store().set_paused(name, false, action)) {
    throw UnknownQueue(fmt::format("queue '{}' is not defined: there is nothing to resume", name));
  }
  core_->signals().queue_work.notify();
  core_->signals().task_work.notify();
  detail::logger().info("queue '{}' resumed by '{}': {}", name, action.actor,
                        detail::loggable(action.reason, core_->options().codec != nullptr));
}

namespace {

const char* kind_text(TypeKind kind) { return kind == TypeKind::workflow ? "workflow" : "activity"; }

void check_type_name(const std::string& name, TypeKind kind) {
  const auto problem = name.empty() ? std::string("is empty") : detail::text_problem(name, 1000);
  if (!problem.empty()) {
    throw InvalidArgument(fmt::format("the {} type name '{}' {}: give the name it is registered under", kind_text(kind),
                                      detail::printable(name, 60), problem));
  }
}

// This engine's own copy of the paused types takes a pause or resume it made at once.
void copy_pause(detail::EngineCore& core, TypeKind kind, const std::string& name, bool paused) {
  if (kind == TypeKind::workflow) {
    core.paused_types().set_workflow(name, paused);
  } else {
    core.paused_types().set_activity(name, paused);
  }
}

}  // namespace

void Queues::pause_type(TypeKind kind, const std::string& name, const OperatorAction& action) {
  check_type_name(name, kind);
  detail::check_action(action);
  core_->queue_store().set_type_paused(kind_text(kind), name, true, action);
  copy_pause(*core_, kind, name, true);  // the other engines hear of it (NOTIFY) and read it
  detail::logger().info("{} type '{}' paused by '{}': {}", kind_text(kind), detail::printable(name), action.actor,
                        detail::loggable(action.reason, core_->options().codec != nullptr));
}

bool Queues::resume_type(TypeKind kind, const std::string& name, const OperatorAction& action) {
  check_type_name(name, kind);
  detail::check_action(action);
  if (!core_->queue_store().set_type_paused(kind_text(kind), name, false, action)) return false;
  copy_pause(*core_, kind, name, false);
  core_->signals().workflow_work.notify();
  core_->signals().task_work.notify();
  core_->signals().queue_work.notify();
  detail::logger().info("{} type '{}' resumed by '{}': {}", kind_text(kind), detail::printable(name), action.actor,
                        detail::loggable(action.reason, core_->options().codec != nullptr));
  return true;
}

void Queues::pause_workflow(const std::string& name, const OperatorAction& action) {
  pause_type(TypeKind::workflow, name, action);
}
bool Queues::resume_workflow(const std::string& name, const OperatorAction& action) {
  return resume_type(TypeKind::workflow, name, action);
}
void Queues::pause_activity(const std::string& name, const OperatorAction& action) {
  pause_type(TypeKind::activity, name, action);
}
bool Queues::resume_activity(const std::string& name, const OperatorAction& action) {
  return resume_type(TypeKind::activity, name, action);
}

std::vector<PausedType> Queues::paused_types() const {
  std::vector<PausedType> types;
  for (auto& row : core_->queue_store().paused_types()) {
    types.push_back({row.kind == "workflow" ? TypeKind::workflow : TypeKind::activity, std::move(row.name),
                     time_of(row.paused_at_us), std::move(row.paused_by), std::move(row.paused_reason)});
  }
  return types;
}

// The engine's side of queues: the ones it serves, adds and admits.
namespace detail {

std::vector<std::string> EngineCore::served_queues() const {
  std::set<std::string> served(options_.queues.begin(), options_.queues.end());
  for (const auto& [name, spec] : registry_.queues) served.insert(name);
  return {served.begin(), served.end()};
}

void EngineCore::check_queue_defined(const std::string& name) {
  if (name == default_queue) return;
  {
    std::lock_guard lock(queues_mutex_);
    if (defined_queues_.count(name)) return;
  }
  if (queue_store().names_of_defined({name}).empty()) {
    throw UnknownQueue(
        fmt::format("queue '{}' is not defined: define it with Engine::add_queue or "
                    "Engine::queues().define (or `durable queues define`) before starting runs on it",
                    name));
  }
  std::lock_guard lock(queues_mutex_);
  defined_queues_.insert(name);
}

// The queues this engine adds are stored with their limits; every named queue it serves must be
// defined by now (by this engine or another).
void EngineCore::define_queues() {
  for (const auto& [name, spec] : registry_.queues) {
    if (queue_store().define(spec)) {
      logger().info("queue '{}' stored with the limits this engine adds it with", name);
    }
  }
  if (!registry_.workflows.empty() && served_queues().empty()) {
    throw InvalidOptions(
        "EngineOptions::queues is empty and the engine adds no queue: it would run none of its workflows' runs; "
        "list \"default\" or the queues it serves");
  }
  for (const auto& name : served_queues()) check_queue_defined(name);
}

std::vector<QueueGauges> EngineCore::queue_gauges() {
  const auto served = served_queues();
  std::vector<QueueGauges> gauges;
  for (auto& row : queue_store().read()) {
    if (std::find(served.begin(), served.end(), row.spec.name) == served.end()) continue;
    const QueueInfo info = info_of(std::move(row));
    gauges.push_back({info.spec.name, info.queued, info.running, info.throttled, info.oldest_queued_seconds,
                      info.paused, info.activities_waiting, info.activities_running});
  }
  return gauges;
}

bool EngineCore::runs_default_queue() const {
  return std::find(options_.queues.begin(), options_.queues.end(), default_queue) != options_.queues.end();
}

pg::RunOrigin EngineCore::placed(pg::RunOrigin origin, const StartOptions& options) {
  origin.queue = queue_of_start(options);
  origin.concurrency_key = options.concurrency_key;
  origin.priority = options.priority;
  origin.deduplication_key = options.deduplication_key;
  origin.debounce_key = options.debounce_key;
  origin.debounce = options.debounce;
  origin.debounce_keeps_first = options.debounce_input == DebounceInput::first;
  check_queue_defined(origin.queue);
  return origin;
}

void EngineCore::start_admission() {
  auto named = served_queues();
  std::erase(named, std::string(default_queue));
  if (named.empty()) return;
  // As many as its runners take in a turn or two: more would only wait, out of turn.
  admission_ = std::make_unique<Admission>(queue_store(), std::move(named), paused_types_,
                                           std::max(16, 2 * options_.workflow_max_concurrency), options_.poll_interval,
                                           signals_, stopping_);
  threads_.emplace_back([this] { admission_->loop(); });
}

}  // namespace detail

Engine& Engine::add_queue(const QueueSpec& spec) {
  core_->check_not_started(fmt::format("queue '{}'", detail::printable(spec.name)));
  detail::check_queue_spec(spec);
  if (!core_->registry().queues.emplace(spec.name, spec).second) {
    throw RegistrationError(fmt::format("queue '{}' is added twice", spec.name));
  }
  return *this;
}

}  // namespace durable
