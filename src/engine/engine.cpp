#include "durable/engine.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include "base/log.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "background/admission.hpp"
#include "background/pause_watch.hpp"
#include "background/presence.hpp"
#include "background/retention.hpp"
#include "background/scheduler.hpp"
#include "background/sweeps.hpp"
#include "base/checks.hpp"
#include "base/printable.hpp"
#include "base/resolved_options.hpp"
#include "base/uuid.hpp"
#include "engine/engine_access.hpp"
#include "engine/engine_core.hpp"
#include "engine/starts.hpp"
#include "pg/database.hpp"
#include "pipeline/dispatcher.hpp"
#include "pipeline/runner.hpp"

namespace durable {

namespace {

// The name shows up in lease owners, logs, metric labels and pg_stat_activity: keep it plain.
void check_instance_name(const std::string& name) {
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  if (name.empty() || name.size() > 63 || !plain) {
    throw InvalidOptions(
        fmt::format("EngineOptions::instance '{}' is invalid: use 1 to 63 characters from "
                    "A-Z a-z 0-9 _ . - (e.g. \"billing\")",
                    detail::printable(name)));
  }
}

EngineOptions checked(EngineOptions o) {
  o.database_url = detail::database_url_or_env(o.database_url, "EngineOptions::database_url");
  pg::validate_schema_name(o.schema);
  auto at_least_one = [](int value, const char* field) {
    if (value < 1)
      throw InvalidOptions(fmt::format("EngineOptions::{} = {} is invalid: it must be >= 1", field, value));
  };
  at_least_one(o.activity_max_concurrency, "activity_max_concurrency");
  for (const auto& [name, slots] : o.instance_activity_concurrency) {
    if (slots < 1) {
      throw InvalidOptions(
          fmt::format("EngineOptions::instance_activity_concurrency[\"{}\"] = {} is invalid: it "
                      "must be >= 1",
                      detail::printable(name), slots));
    }
  }
  at_least_one(o.workflow_max_concurrency, "workflow_max_concurrency");
  at_least_one(o.connection_pool_size, "connection_pool_size");
  auto positive = [](Duration value, const char* field) {
    if (value <= Duration{0}) {
      throw InvalidOptions(fmt::format("EngineOptions::{} = {}ms is invalid: it must be > 0", field, value.count()));
    }
  };
  positive(o.poll_interval, "poll_interval");
  positive(o.workflow_lease, "workflow_lease");
  positive(o.lease_margin, "lease_margin");
  positive(o.database_unavailable_after, "database_unavailable_after");
  if (o.retention < Duration{0}) {
    throw InvalidOptions(fmt::format(
        "EngineOptions::retention = {}ms is invalid: use 0 to keep ended runs until pruned, or how long to keep them",
        o.retention.count()));
  }
  check_instance_name(o.instance);
  detail::check_app_version(o.app_version);
  detail::check_served_queues(o.queues);
  detail::check_engine_queue_limits(o.queue_activity_concurrency);
  if (!o.listen_url.empty() && !o.pooler_mode) {
    throw InvalidOptions(
        "EngineOptions::listen_url is set without pooler_mode: it is where an engine behind a pooler LISTENs; "
        "without a pooler the engine listens on database_url, so leave listen_url empty (or set pooler_mode = true)");
  }
  return o;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown-host");
}

}  // namespace

namespace detail {

EngineCore::EngineCore(EngineOptions o)
    : options_(checked(std::move(o))),
      owner_(fmt::format("{}@{}:{}", options_.instance, host_name(), getpid())),
      database_(options_.database_url, options_.schema, options_.connection_pool_size,
                fmt::format("durable/{}/{}", options_.schema, options_.instance), options_.app_version,
                pg::SessionPolicy{.migrate = options_.migrate_schema,
                                  .pooler = options_.pooler_mode,
                                  .listen_url = options_.listen_url,
                                  .unavailable_after = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      options_.database_unavailable_after)},
                options_.codec),
      steps_([this](const std::vector<const pg::StepCommit*>& batch) {
        auto outcomes = store().complete_steps(batch, owner_, options_.lease_margin);
        ++metrics_.outcome_commits;
        return outcomes;
      }),
      finisher_(steps_, owner_, options_.lease_margin, metrics_) {
  logger();  // made now, so spdlog::get("durable") finds it once an engine exists
}

EngineCore::~EngineCore() { stop(); }

void EngineCore::start_dispatcher() {
  const TransactionSource transactions{database_.transactions(), store()};
  std::lock_guard lock(lifecycle_mutex_);
  dispatcher_ = std::make_unique<Dispatcher>(
      DispatcherSettings{owner_, options_.instance, options_.poll_interval, options_.lease_margin,
                         options_.idempotency_input_mismatch_fails, served_queues(),
                         options_.queue_activity_concurrency},
      activity_capacity(), registry_, paused_types_, store(), finisher_, metrics_, signals_, stopping_, &transactions);
}

void EngineCore::start_runner() {
  caches_ = std::make_unique<JournalCaches>(store(), registry_);
  replayer_ = std::make_unique<Replayer>(ReplaySettings{owner_, options_.on_nondeterminism, options_.codec != nullptr,
                                                        options_.lease_margin, runs_default_queue()},
                                         registry_, paused_types_, store(), *caches_,
                                         dispatcher_ ? &dispatcher_->slots() : nullptr, metrics_, signals_, stopping_);
  finisher_.continue_in_place_with(*replayer_, *caches_, paused_types_);
  runner_ = std::make_unique<Runner>(
      RunnerSettings{owner_, options_.workflow_max_concurrency, options_.workflow_lease, options_.poll_interval,
                     options_.app_version, Json(served_queues()).dump()},
      paused_types_, store(), *replayer_, *caches_, metrics_, signals_.workflow_work, stopping_);
}

int EngineCore::activity_capacity() const {
  auto it = options_.instance_activity_concurrency.find(options_.instance);
  return it == options_.instance_activity_concurrency.end() ? options_.activity_max_concurrency : it->second;
}

EngineMetrics EngineCore::snapshot() {
  EngineMetrics m;
  m.instance = options_.instance;
  m.schema = options_.schema;
  m.activity_capacity = activity_capacity();
  {
    std::lock_guard lock(lifecycle_mutex_);
    if (dispatcher_) dispatcher_->add_gauges(m);
  }
  // Counters after the gauges: a job counts its outcome before it leaves the in-flight gauge, so
  // a snapshot that shows no job in flight also shows every outcome counted.
  metrics_.fill(m);
  m.saturation = static_cast<double>(m.activity_busy) / m.activity_capacity;
  try {  // the second read is skipped when the first failed: the database is likely out of reach
    m.queue_age_seconds = registry_.activities.empty()
                              ? 0.0
                              : store().queue_age(registry_.activity_names_json(), Json(served_queues()).dump());
    m.workflow_queue_age_seconds =
        registry_.workflows.empty()
            ? 0.0
            : store().workflow_queue_age(registry_.workflow_names_json(), Json(served_queues()).dump());
    m.workflows_blocked = registry_.workflows.empty() ? 0 : store().blocked_count(registry_.workflow_names_json());
    m.queues = queue_gauges();
  } catch (const std::exception& e) {
    logger().debug("metrics: reading the queue ages failed: {}", e.what());
  }
  return m;
}

std::string EngineCore::send_message(const std::string& workflow_id, const std::string& topic, const Json& payload,
                                     const SendOptions& options) {
  check_workflow_id(workflow_id);
  check_topic(topic);
  check_message_key(options.idempotency_key);
  check_payload(payload, fmt::format("the payload of a message to '{}'", workflow_id));
  std::string message_id = random_uuid();  // not const: returned, it moves
  pg::SendOutcome sent = store().send_message(workflow_id, topic, payload, message_id, options.idempotency_key);
  // Running as the statement began, not by the time it held the row: it ended, or the id has a
  // new run since. Once more, to answer for what is there now.
  if (!sent.sent && sent.existing_id.empty() && sent.status == journal::RunStatus::running) {
    sent = store().send_message(workflow_id, topic, payload, message_id, options.idempotency_key);
  }
  if (sent.sent) return message_id;
  if (!sent.existing_id.empty()) return sent.existing_id;
  if (!sent.status) throw WorkflowNotFound(workflow_id);
  // Ended: it takes no more.
  throw WorkflowEnded(workflow_id, std::string(to_text(*sent.status)));
}

void EngineCore::add_builtin_activities() {
  if (registry_.workflows.empty() || registry_.activities.count(send_message_activity)) return;
  // Its result says whether the message went in; not found and ended are answers, not failures,
  // so they are journaled at once and WorkflowContext::send throws them on every replay.
  auto body = [this](ActivityContext&, const Json& in) -> Json {
    SendOptions options;
    options.idempotency_key = in.at("idempotency_key").get<std::string>();
    const std::string id = in.at("workflow_id").get<std::string>();
    try {
      return {{"message_id", send_message(id, in.at("topic").get<std::string>(), in.at("payload"), options)}};
    } catch (const WorkflowNotFound&) {
      return {{"error", "not_found"}};
    } catch (const WorkflowEnded& e) {
      return {{"error", "ended"}, {"status", e.status()}};
    }
  };
  registry_.activities.emplace(send_message_activity, make_activity<Json>(send_message_activity, {}, body));
}

void EngineCore::start() {
  if (started_.exchange(true)) return;
  database_.ensure_schema();  // the one place: a failure here fails start(), not a first claim
  define_queues();
  add_builtin_activities();
  watch_pauses();  // before any claim: a type paused now is not claimed even once
  // Both made before any thread starts: each may hand work straight to the other.
  if (!registry_.activities.empty()) start_dispatcher();
  if (!registry_.workflows.empty()) start_runner();
  if (runner_) {
    for (int i = 0; i < options_.workflow_max_concurrency; ++i) threads_.emplace_back([this] { runner_->loop(); });
    local_runner_ = runner_.get();
    sweeps_ = std::make_unique<Sweeps>(store(), registry_.workflow_names_json(), 5 * options_.poll_interval, signals_,
                                       stopping_);
    threads_.emplace_back([this] { sweeps_->loop(); });
    start_admission();
  }
  if (dispatcher_) {
    threads_.emplace_back([this] { dispatcher_->loop(); });
    dispatcher_->start_watching();  // stopped by drain(): it works on through the shutdown grace
  }
  presence_ = std::make_unique<Presence>(store(),
                                         PresenceRow{owner_, options_.instance, dispatcher_ ? activity_capacity() : 0,
                                                     runner_ ? options_.workflow_max_concurrency : 0},
                                         5 * options_.poll_interval, signals_, stopping_);
  threads_.emplace_back([this] { presence_->loop(); });
  // Every engine fires schedules; row locks keep each fire once.
  scheduler_ = std::make_unique<Scheduler>(schedule_store(), options_.poll_interval, signals_, stopping_);
  threads_.emplace_back([this] { scheduler_->loop(); });
  if (options_.retention > Duration{0}) {
    retention_ = std::make_unique<Retention>(run_store(), options_.retention, owner_, signals_, stopping_);
    threads_.emplace_back([this] { retention_->loop(); });
  }
  listen_once();
  detail::logger().info("engine '{}' started ({} workflows, {} activities, schema '{}')", owner_,
                        registry_.workflows.size(), registry_.activities.size(), options_.schema);
}

void EngineCore::watch_pauses() {
  paused_types_.serve(registry_.workflow_names(), registry_.activity_names());
  pause_watch_ =
      std::make_unique<PauseWatch>(queue_store(), paused_types_, options_.poll_interval, signals_, stopping_);
  pause_watch_->read();
  threads_.emplace_back([this] { pause_watch_->loop(); });
}

void EngineCore::run_cancelled(const std::string& run_id) {
  signals_.run_ended(run_id);
  try {
    store().cancel_children(run_id);
  } catch (const std::exception& e) {
    detail::logger().warn("cancelling the children of run {} failed (the sweep will): {}", run_id, e.what());
  }
}

void EngineCore::listen_once() {
  std::call_once(listener_once_, [&] { listener_ = std::thread([this] { listen(); }); });
}

void EngineCore::stop() {
  // A thin client has no threads but its listener, if it waited for a result.
  std::call_once(listener_once_, [] {});  // none starts from now on; one that started is joinable
  if (!started_.load()) {
    if (listener_.joinable() && !stopping_.exchange(true)) listener_.join();
    return;
  }
  // New starts are claimed by any engine. A start that had the runner hands its run over first,
  // while the runner threads still take what is offered (they return once stopping and idle).
  local_runner_ = nullptr;
  { const std::unique_lock starts_done(local_starts_); }
  if (stopping_.exchange(true)) return;
  if (dispatcher_) dispatcher_->tell_stopping();  // bodies see cancelled() now, not when the grace ends
  signals_.workflow_work.notify();
  signals_.task_work.notify();
  signals_.schedule_work.notify();
  signals_.queue_work.notify();
  signals_.paused_types.notify();
  for (auto& t : threads_) t.join();  // claim loops exit; a replay in progress finishes first
  threads_.clear();
  if (listener_.joinable()) listener_.join();  // not when start() failed before it
  if (dispatcher_) dispatcher_->drain(options_.shutdown_grace);
  {
    std::lock_guard lock(lifecycle_mutex_);
    dispatcher_.reset();
  }
  if (presence_) presence_->removed();  // not when start() failed before it
  presence_.reset();
  pause_watch_.reset();
  runner_.reset();
  scheduler_.reset();
  retention_.reset();
  sweeps_.reset();
  admission_.reset();
  detail::logger().info("engine '{}' stopped", owner_);
}

void EngineCore::listen() {
  database_.listen(
      [this](pg::Wake kind, const std::string& payload) {
        switch (kind) {
          case pg::Wake::workflows:  // it passes the wake-up on when it found work
            signals_.workflow_work.notify_one();
            signals_.queue_work.notify();
            break;
          case pg::Wake::tasks: signals_.task_work.notify(); break;
          case pg::Wake::ended:
            signals_.run_ended(payload);  // the run that ended, or "" (all waiters look)
            signals_.queue_work.notify();
            break;
          case pg::Wake::schedules: signals_.schedule_work.notify(); break;
          case pg::Wake::events: signals_.events.notify(); break;
          case pg::Wake::paused: signals_.paused_types.notify(); break;
        }
      },
      [this] { return stopping_.load(); });
}

}  // namespace detail

Engine::Engine(EngineOptions options)
    : core_(std::make_shared<detail::EngineCore>(std::move(options))),
      schedules_(*core_),
      runs_(core_),
      queues_(core_) {}

Schedules& Engine::schedules() { return schedules_; }
Runs& Engine::runs() { return runs_; }
Queues& Engine::queues() { return queues_; }

Engine::~Engine() { stop(); }

const EngineOptions& Engine::options() const { return core_->options(); }

EngineMetrics Engine::metrics() const { return core_->snapshot(); }

Engine& Engine::add_definition(detail::ActivityDefinition definition) {
  core_->check_not_started(fmt::format("activity '{}'", detail::printable(definition.name)));
  detail::validate(detail::resolve({}, definition.options),
                   definition.name);  // a bad declared policy fails registration
  if (core_->registry().activities.count(definition.name) || core_->registry().workflows.count(definition.name)) {
    throw RegistrationError(fmt::format("'{}' is registered twice: names must be unique per engine", definition.name));
  }
  std::string name = definition.name;
  core_->registry().activities.emplace(std::move(name), std::move(definition));
  return *this;
}

Engine& Engine::add_definition(detail::WorkflowDefinition definition) {
  core_->check_not_started(fmt::format("workflow '{}'", detail::printable(definition.name)));
  if (core_->registry().activities.count(definition.name) || core_->registry().workflows.count(definition.name)) {
    throw RegistrationError(fmt::format("'{}' is registered twice: names must be unique per engine", definition.name));
  }
  std::string name = definition.name;
  core_->registry().workflows.emplace(std::move(name), std::move(definition));
  return *this;
}

void Engine::start() { core_->start(); }

std::string Engine::send_payload(const WorkflowId& workflow_id, const std::string& topic, const Json& payload,
                                 const SendOptions& options) {
  return core_->send_message(workflow_id.str(), topic, payload, options);
}

void Engine::stop() {
  if (core_) core_->stop();
}

UntypedWorkflowHandle Engine::start_workflow(const std::string& workflow_name, const WorkflowId& workflow_id,
                                             const Json& input, const StartOptions& options) {
  auto attempt = detail::try_start(core_, workflow_name, workflow_id.str(), input, options);
  if (attempt.duplicate) {
    throw DuplicateStart(options.deduplication_key, attempt.run.id(), attempt.run.run_id());
  }
  if (!attempt.started && !attempt.debounced) {
    throw WorkflowAlreadyStarted(workflow_id, attempt.run.run_id(), attempt.existing_status);
  }
  return attempt.run;
}

StartOutcome<Json> Engine::start_or_find(const std::string& workflow_name, const WorkflowId& workflow_id,
                                         const Json& input, const StartOptions& options) {
  auto attempt = detail::try_start(core_, workflow_name, workflow_id.str(), input, options);
  return {WorkflowHandle<Json>(std::move(attempt.run)), attempt.started};
}

Engine& Engine::add_trigger(const std::string& trigger, const std::string& workflow_name) {
  core_->check_not_started(fmt::format("trigger '{}'", detail::printable(trigger)));
  core_->registry().workflow(workflow_name);  // throws UnknownWorkflow
  if (trigger.empty() || trigger.find(':') != std::string::npos || trigger.find('\0') != std::string::npos) {
    throw RegistrationError(
        fmt::format("trigger name '{}' is invalid: use a non-empty name without ':' or NUL "
                    "(it prefixes the workflow ids it starts)",
                    detail::printable(trigger)));
  }
  if (!core_->registry().triggers.emplace(trigger, workflow_name).second) {
    throw RegistrationError(fmt::format("trigger '{}' is registered twice", trigger));
  }
  return *this;
}

StartOutcome<Json> Engine::deliver(const std::string& trigger, const Event& event) {
  auto it = core_->registry().triggers.find(trigger);
  if (it == core_->registry().triggers.end()) {
    throw UnknownTrigger(
        fmt::format("no trigger named '{}' is registered on this engine; register it with "
                    "Engine::add_trigger",
                    trigger));
  }
  if (event.event_id.empty()) {
    throw InvalidEvent(
        fmt::format("event for trigger '{}' has no id: give every event a stable id (the same on "
                    "every redelivery), so that a redelivered event starts nothing new",
                    trigger));
  }
  pg::RunOrigin origin;
  origin.started_by = "trigger";
  origin.origin = trigger;
  auto attempt = detail::try_start(core_, it->second, trigger + ":" + event.event_id, event.payload, {}, origin);
  if (!attempt.started) {
    detail::logger().info("event '{}' for trigger '{}' was delivered before: run {} already exists", event.event_id,
                          trigger, attempt.run.run_id());
  }
  return {WorkflowHandle<Json>(std::move(attempt.run)), attempt.started};
}

StartOutcome<Json> Engine::deliver(const std::string& trigger, const Json& event) {
  if (!event.is_object() || !event.contains("event_id") || !event["event_id"].is_string()) {
    throw InvalidEvent(
        fmt::format("event for trigger '{}' has no string \"event_id\": send "
                    "{{\"event_id\": \"<stable id>\", \"payload\": ...}}",
                    trigger));
  }
  return deliver(trigger, Event{event["event_id"].get<std::string>(), event.value("payload", Json())});
}

UntypedWorkflowHandle Engine::workflow(const WorkflowId& workflow_id) {
  detail::check_workflow_id(workflow_id.str());
  auto row = core_->store().read_workflow(workflow_id.str());
  if (!row) throw WorkflowNotFound(workflow_id);
  return detail::EngineAccess::handle(core_, workflow_id.str(), row->run_id);
}

UntypedWorkflowHandle Engine::workflow_run(const RunId& run_id) {
  auto row = core_->store().read_run(run_id.str());
  if (!row) throw WorkflowNotFound::run(run_id);
  return detail::EngineAccess::handle(core_, row->workflow_id, row->run_id);  // as its end's NOTIFY names it
}

}  // namespace durable
