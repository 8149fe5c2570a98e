// Engine: registers workflows and activities, runs them, and starts workflow runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "durable/activity.hpp"
#include "durable/codec.hpp"
#include "durable/engine_options.hpp"
#include "durable/handle.hpp"
#include "durable/ids.hpp"
#include "durable/messages.hpp"
#include "durable/metrics.hpp"
#include "durable/options.hpp"
#include "durable/queues.hpp"
#include "durable/runs.hpp"
#include "durable/schedule.hpp"
#include "durable/start_options.hpp"
#include "durable/versioning.hpp"
#include "durable/workflow.hpp"

namespace durable {

namespace detail {
struct EngineAccess;  // src/engine/engine_access.hpp
}

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();  // stop()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Registers a workflow or activity type (told apart by its context parameter). An
  // activity may be passed as an instance carrying its dependencies; its operator() is
  // called from several threads at once. An activity that takes a TransactionContext&
  // (durable/pqxx.hpp) is transactional: its writes commit with its result, once.
  template <detail::Named T>
  Engine& add(T instance = T{}) {
    using Ctx = typename detail::call_traits<T>::context;
    if constexpr (std::is_same_v<Ctx, ActivityContext> || std::is_same_v<Ctx, TransactionContext>) {
      ActivityOptions declared{};
      if constexpr (detail::HasOptions<T>) declared = T::options();
      auto def = detail::make_activity<detail::input_of<T>, Ctx>(T::name, declared, std::move(instance));
      if constexpr (detail::HasIdempotencyKey<T>) {
        def.key_of = [](const Json& input) -> std::optional<std::string> {
          return T::idempotency_key(detail::from_payload<detail::input_of<T>>(input, "an activity input"));
        };
      }
      return add_definition(std::move(def));
    } else {
      static_assert(std::is_same_v<Ctx, WorkflowContext>,
                    "operator() must take durable::ActivityContext&, durable::TransactionContext& or "
                    "durable::WorkflowContext& first");
      (void)instance;
      return add_definition(detail::make_workflow<detail::input_of<T>>(T::name, [] { return T{}; }));
    }
  }

  // Registers a plain callable `Out(ActivityContext&, const In&)` as an activity, or
  // `Out(TransactionContext&, const In&)` as a transactional one (durable/pqxx.hpp).
  template <typename In, typename Out, typename F>
  Engine& add_activity(const ActivityRef<In, Out>& activity, F body, ActivityOptions options = {}) {
    using Ctx =
        std::conditional_t<std::is_invocable_v<F&, ActivityContext&, const In&>, ActivityContext, TransactionContext>;
    return add_definition(detail::make_activity<In, Ctx>(activity.name, std::move(options), std::move(body)));
  }

  // Registers a plain callable `Out(WorkflowContext&, const In&)` as a workflow. It is copied
  // for every replay, so it must be deterministic and keep no state of its own.
  template <typename In, typename Out, typename F>
  Engine& add_workflow(const WorkflowRef<In, Out>& workflow, F body) {
    return add_definition(detail::make_workflow<In>(workflow.name, [body = std::move(body)] { return body; }));
  }

  // Migrates the schema (under an advisory lock) and starts the dispatcher and runners.
  void start();
  // Stops claiming, lets running activities finish within shutdown_grace, releases the rest.
  void stop();

  // Starts a workflow run under a caller-chosen id. Throws WorkflowAlreadyStarted when the id
  // is taken (as the id reuse policy judges), and InvalidArgument (nothing written) on bad input.
  template <detail::Named W>
  WorkflowHandle<detail::result_of<W>> start_workflow(const WorkflowId& workflow_id, const detail::input_of<W>& input,
                                                      const StartOptions& options = {}) {
    return WorkflowHandle<detail::result_of<W>>(
        start_workflow(W::name, workflow_id, detail::to_payload(input, "a workflow input"), options));
  }

  // Like start_workflow, but a taken id is an answer, not an error: the existing run's handle
  // with started = false. Safe to call again with the same id after any failure.
  template <detail::Named W>
  StartOutcome<detail::result_of<W>> start_or_find(const WorkflowId& workflow_id, const detail::input_of<W>& input,
                                                   const StartOptions& options = {}) {
    auto outcome = start_or_find(W::name, workflow_id, detail::to_payload(input, "a workflow input"), options);
    return {WorkflowHandle<detail::result_of<W>>(std::move(outcome.run)), outcome.started};
  }
  StartOutcome<Json> start_or_find(const std::string& workflow_name, const WorkflowId& workflow_id, const Json& input,
                                   const StartOptions& options = {});

  // Registers a trigger: events delivered to it start workflow W under id `{trigger}:{event_id}`.
  template <detail::Named W>
  Engine& add_trigger(const std::string& trigger) {
    return add_trigger(trigger, W::name);
  }
  Engine& add_trigger(const std::string& trigger, const std::string& workflow_name);

  // Defines a named queue (its limits stored as start() begins, replacing what was stored) and
  // serves it: this engine admits and runs its runs. Before start(). Throws InvalidQueue, and
  // RegistrationError for a queue added twice or after start().
  Engine& add_queue(const QueueSpec& spec);

  // Starts the trigger's workflow for this event, once per event id: a redelivery returns the
  // existing run with started = false. Throws InvalidEvent (nothing written) when the event id
  // is missing or empty, UnknownTrigger for an unregistered trigger.
  StartOutcome<Json> deliver(const std::string& trigger, const Event& event);
  // The same for an event as JSON: {"event_id": "...", "payload": ...}.
  StartOutcome<Json> deliver(const std::string& trigger, const Json& event);
  template <typename In, typename Out>
  WorkflowHandle<Out> start_workflow(const WorkflowRef<In, Out>& workflow, const WorkflowId& workflow_id,
                                     const std::type_identity_t<In>& input, const StartOptions& options = {}) {
    return WorkflowHandle<Out>(
        start_workflow(workflow.name, workflow_id, detail::to_payload(input, "a workflow input"), options));
  }
  // Untyped start by registered name; the input must convert to the workflow's input type.
  UntypedWorkflowHandle start_workflow(const std::string& workflow_name, const WorkflowId& workflow_id,
                                       const Json& input, const StartOptions& options = {});

  // A handle to an existing run, from this or any other process. Throws WorkflowNotFound.
  template <detail::Named W>
  WorkflowHandle<detail::result_of<W>> workflow(const WorkflowId& workflow_id) {
    return WorkflowHandle<detail::result_of<W>>(workflow(workflow_id));
  }
  template <typename In, typename Out>
  WorkflowHandle<Out> workflow(const WorkflowRef<In, Out>&, const WorkflowId& workflow_id) {
    return WorkflowHandle<Out>(workflow(workflow_id));
  }
  UntypedWorkflowHandle workflow(const WorkflowId& workflow_id);

  // A handle to one run by its run id, whether or not it is its id's latest. Throws WorkflowNotFound.
  template <detail::Named W>
  WorkflowHandle<detail::result_of<W>> workflow_run(const RunId& run_id) {
    return WorkflowHandle<detail::result_of<W>>(workflow_run(run_id));
  }
  UntypedWorkflowHandle workflow_run(const RunId& run_id);

  // Sends a message to the latest run of a workflow, from any process, whether or not the
  // workflow waits for it yet: it is in the run's inbox once this returns, and the workflow
  // receives it with WorkflowContext::receive, once, in send order per topic. Returns the
  // message id. Throws WorkflowNotFound for an unknown id, WorkflowEnded when the run has ended,
  // InvalidTopic, InvalidIdempotencyKey or PayloadError on bad input (nothing written).
  template <typename T>
  std::string send(const WorkflowId& workflow_id, const std::string& topic, const T& payload,
                   const SendOptions& options = {}) {
    return send_payload(workflow_id, topic, detail::to_payload(payload, "a message payload"), options);
  }

  // Create, change, pause and list cron schedules; every started engine fires them.
  Schedules& schedules();
  // Find and fix runs: list, read, resume, fork, cancel, delete, prune, audit (durable/runs.hpp).
  Runs& runs();
  // The named queues: define, list, pause and resume them (durable/queues.hpp).
  Queues& queues();

  const EngineOptions& options() const;
  // A snapshot of this instance's gauges, counters and latency histograms; reads the queue age
  // from the database (left empty if that read fails).
  EngineMetrics metrics() const;

 private:
  friend struct detail::EngineAccess;  // the test kit's replay checks read the registry
  std::string send_payload(const WorkflowId& workflow_id, const std::string& topic, const Json& payload,
                           const SendOptions& options);
  Engine& add_definition(detail::ActivityDefinition definition);
  Engine& add_definition(detail::WorkflowDefinition definition);
  std::shared_ptr<detail::EngineCore> core_;
  Schedules schedules_;
  Runs runs_;
  Queues queues_;
};

}  // namespace durable
