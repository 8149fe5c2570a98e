// WorkflowContext: the deterministic API workflow code uses. Every call is journaled.
//
// Workflow code is re-run from the top whenever the workflow must continue; a call whose
// outcome is already journaled returns it without running anything. So workflow code must
// be deterministic: take time, random values and ids from the context, and do side effects
// only in activities. A call whose result is not there yet unwinds the workflow function
// with an internal signal that is not a std::exception: never swallow it with `catch (...)`.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <spdlog/logger.h>

#include "durable/detail/payload.hpp"
#include "durable/errors.hpp"
#include "durable/ids.hpp"
#include "durable/messages.hpp"
#include "durable/options.hpp"
#include "durable/schedule_records.hpp"
#include "durable/start_options.hpp"

namespace durable {

namespace detail {
class Replay;
}

// Typed names for an activity or workflow registered as a plain callable
// (Engine::add_activity, Engine::add_workflow); calls and starts through them are type-checked.
template <typename In, typename Out>
struct ActivityRef {
  std::string name;
};
template <typename In, typename Out>
struct WorkflowRef {
  std::string name;
};

class WorkflowContext;

namespace detail {
// What every future of a WorkflowContext is: the journal step it waits on.
class Awaitable {
 protected:
  Awaitable(WorkflowContext& ctx, int step) : ctx_(&ctx), step_(step) {}
  WorkflowContext* ctx_;
  int step_;
  friend class durable::WorkflowContext;
};
}  // namespace detail

// The pending result of an activity started with WorkflowContext::start.
template <typename R>
class Future : public detail::Awaitable {
 public:
  // Waits durably for the activity; throws ActivityFailed when it failed for good.
  R get();

 private:
  friend class WorkflowContext;
  Future(WorkflowContext& ctx, int step, std::string what) : Awaitable(ctx, step), what_(std::move(what)) {}
  std::string what_;
};

// A durable timer started with WorkflowContext::start_timer.
class TimerFuture : public detail::Awaitable {
 public:
  void get();  // waits until the timer fired

 private:
  friend class WorkflowContext;
  using Awaitable::Awaitable;
};

// A receive started with WorkflowContext::start_receive: it takes a message when awaited.
template <typename T>
class MessageFuture : public detail::Awaitable {
 public:
  // Waits for the message; throws PayloadError when it does not convert to T.
  T get();

 private:
  friend class WorkflowContext;
  MessageFuture(WorkflowContext& ctx, int step, std::string topic) : Awaitable(ctx, step), topic_(std::move(topic)) {}
  std::string topic_;
};

// A child workflow started with WorkflowContext::start_child.
template <typename R>
class ChildFuture : public detail::Awaitable {
 public:
  // Waits durably for the child to end: its result, or ChildWorkflowFailed (carrying the child's
  // error) when it failed or was cancelled.
  R get();
  const WorkflowId& workflow_id() const { return child_id_; }  // the child's

 private:
  friend class WorkflowContext;
  ChildFuture(WorkflowContext& ctx, int step, WorkflowId child_id, std::string name)
      : Awaitable(ctx, step), child_id_(std::move(child_id)), name_(std::move(name)) {}
  WorkflowId child_id_;
  std::string name_;
};

class WorkflowContext {
 public:
  WorkflowContext(const WorkflowContext&) = delete;
  WorkflowContext& operator=(const WorkflowContext&) = delete;

  const WorkflowId& workflow_id() const;

  // For a run a schedule started: its schedule, nominal time, window and how many fires it
  // stands for. Empty for runs started any other way.
  std::optional<ScheduleContext> schedule() const;

  // Starts an activity without waiting for it; start several, then get() each: they run in parallel.
  template <detail::Named A>
  Future<detail::result_of<A>> start(const detail::input_of<A>& input, const ActivityOptions& options = {}) {
    return start_named<detail::result_of<A>>(A::name, detail::to_payload(input, "an activity input"), options);
  }
  template <typename In, typename Out>
  Future<Out> start(const ActivityRef<In, Out>& activity, const std::type_identity_t<In>& input,
                    const ActivityOptions& options = {}) {
    return start_named<Out>(activity.name, detail::to_payload(input, "an activity input"), options);
  }

  // Runs an activity and waits for its result. Call-site options win over the activity's own.
  template <detail::Named A>
  detail::result_of<A> call(const detail::input_of<A>& input, const ActivityOptions& options = {}) {
    return start<A>(input, options).get();
  }
  template <typename In, typename Out>
  Out call(const ActivityRef<In, Out>& activity, const std::type_identity_t<In>& input,
           const ActivityOptions& options = {}) {
    return start(activity, input, options).get();
  }

  // A durable timer: the workflow continues once the database clock passes now() + duration.
  void sleep(Duration duration);

  // The database clock's time, journaled on first run, so replays see the same value.
  std::chrono::system_clock::time_point now();

  // A random UUID (v4), journaled on first run.
  std::string uuid();

  // Takes the oldest message of `topic` this run has not received yet, waiting up to `timeout`
  // (a durable timer on the database clock; zero: not at all) for one to be sent. Nothing when
  // the time ran out. Each message is received once, in send order per topic, and what was
  // received is journaled: replays get the same. Throws InvalidTopic for a bad topic and
  // PayloadError when the message does not convert to T.
  template <typename T>
  std::optional<T> receive(const std::string& topic, Duration timeout) {
    std::optional<Json> payload = receive_payload(topic, timeout);
    if (!payload) return std::nullopt;
    return detail::from_payload<T>(*payload, "a message of topic '" + topic + "'");
  }
  // The same, waiting as long as it takes.
  template <typename T>
  T receive(const std::string& topic) {
    return detail::from_payload<T>(*receive_payload(topic, std::nullopt), "a message of topic '" + topic + "'");
  }

  // The future forms of sleep and receive, to wait on with wait_any or get(). A timer starts
  // counting at once; a receive takes its message when the code awaits it (so until then a
  // message stays in the inbox for any receive of its topic).
  TimerFuture start_timer(Duration duration) { return TimerFuture(*this, start_timer_step(duration)); }
  template <typename T>
  MessageFuture<T> start_receive(const std::string& topic) {
    return MessageFuture<T>(*this, start_receive_step(topic), topic);
  }

  // Waits until one of the futures is ready and returns its index. The choice is journaled, so
  // replays choose the same even when others have become ready since. When several are ready as
  // the code gets here: outcomes already journaled (activities) first, then timers and messages
  // by their time on the database clock (a message sent after a timer's fire time loses to it),
  // ties in the order given. Only the chosen one is settled: a receive not chosen has taken no
  // message. get() on the chosen one returns (or throws) without waiting. A future already
  // ready is chosen again by a later wait_any: leave out the ones handled. Throws
  // InvalidArgument when given no futures.
  template <typename... Futures>
  requires(sizeof...(Futures) > 0 && (std::is_base_of_v<detail::Awaitable, Futures> && ...)) std::size_t
      wait_any(const Futures&... futures) {
    return wait_any_steps({step_of(futures)...});
  }
  template <typename F>
  requires std::is_base_of_v<detail::Awaitable, F> std::size_t wait_any(const std::vector<F>& futures) {
    std::vector<int> steps;
    for (const auto& f : futures) steps.push_back(step_of(f));
    return wait_any_steps(steps);
  }

  // Starts workflow W as a child of this run, under `child_id`, and returns a future of its result
  // without waiting. The start is journaled: a replay never starts it again. The child runs on
  // any engine that runs W (W must be registered on this one too: the input is checked against
  // it). When the id is taken (as options.id_reuse judges it) this throws WorkflowAlreadyStarted,
  // here and again on every replay. A child still running when this run ends is cancelled, or
  // left running with ParentClosePolicy::abandon. Throws ChildDepthExceeded at max_child_depth,
  // InvalidWorkflowId, UnknownWorkflow or PayloadError on bad input (nothing is started).
  template <detail::Named W>
  ChildFuture<detail::result_of<W>> start_child(const WorkflowId& child_id, const detail::input_of<W>& input,
                                                const ChildOptions& options = {}) {
    return start_child_named<detail::result_of<W>>(W::name, child_id,
                                                   detail::to_payload(input, "a child workflow input"), options);
  }
  template <typename In, typename Out>
  ChildFuture<Out> start_child(const WorkflowRef<In, Out>& workflow, const WorkflowId& child_id,
                               const std::type_identity_t<In>& input, const ChildOptions& options = {}) {
    return start_child_named<Out>(workflow.name, child_id, detail::to_payload(input, "a child workflow input"),
                                  options);
  }
  // Starts a child and waits for its result.
  template <detail::Named W>
  detail::result_of<W> call_child(const WorkflowId& child_id, const detail::input_of<W>& input,
                                  const ChildOptions& options = {}) {
    return start_child<W>(child_id, input, options).get();
  }
  template <typename In, typename Out>
  Out call_child(const WorkflowRef<In, Out>& workflow, const WorkflowId& child_id,
                 const std::type_identity_t<In>& input, const ChildOptions& options = {}) {
    return start_child(workflow, child_id, input, options).get();
  }

  // Publishes `value` under `key` for anyone to read with a handle's get_event (journaled, so a
  // replay does not publish again); a later set of the same key replaces it. Throws InvalidTopic
  // for a bad key, PayloadError for a value over the payload limits.
  template <typename T>
  void set_event(const std::string& key, const T& value) {
    set_event_payload(key, detail::to_payload(value, "an event value"));
  }

  // Sends a message to the latest run of another workflow, once: the send is a journaled step,
  // so replays do not send again. Returns the message id. Throws what Engine::send throws
  // (WorkflowNotFound, WorkflowEnded, InvalidTopic, ...), the same on every replay, and
  // ActivityFailed when the database stayed unreachable through its 20 attempts.
  template <typename T>
  std::string send(const WorkflowId& workflow_id, const std::string& topic, const T& payload,
                   const SendOptions& options = {}) {
    return send_payload(workflow_id, topic, detail::to_payload(payload, "a message payload"), options);
  }

  // Versioning (docs/versioning.md). Whether this run takes the new path of change `change_id`:
  // true for runs that reach this point under code with the patch (a marker is journaled, so
  // their replays say true again), false for runs whose journal went past this point without the
  // marker (they keep their old path). The first answer in a run holds for the rest of it. Throws
  // InvalidPatchId for an empty id, one over 255 bytes, or one holding NUL.
  //   if (ctx.patched("charge-before-reserve")) { charge; reserve; } else { reserve; charge; }
  bool patched(const std::string& change_id);
  // Once no run that went past this point without the marker is left: always the new path. Runs
  // that journaled the marker replay as before; no marker is written. Remove the call once no
  // run with the marker is left either.
  void deprecate_patch(const std::string& change_id);

  // True while the code re-runs what the last committed replay of this run ran (what it does now,
  // it did before): until an await gives it something that replay did not have.
  bool is_replaying() const;
  // A logger for workflow code that writes each line once: what the code logs while replaying is
  // dropped, and the rest is written (to spdlog's default logger, prefixed with the workflow id)
  // once the replay's commit went in (docs/versioning.md#replay-safe-logging).
  spdlog::logger& logger();

  // Ends this run and starts the next run of the same workflow id with `input` and an empty
  // journal, in one transaction: a workflow that loops without end keeps a bounded history. The
  // run ends `continued`; handles' result() follow the chain to the last run's result. The next
  // run keeps this one's parent and takes over the messages it never received (in send order) and
  // the events it published. Activities not awaited are dropped, and children still running are
  // cancelled or abandoned as when the run ends. Never returns: it unwinds the code as a pending
  // step does (do not swallow it with `catch (...)`). Throws PayloadError, into the code, when
  // `input` is not an input of this workflow; WorkflowCancelled when a cancel is asked for.
  template <typename T>
  [[noreturn]] void continue_as_new(const T& input) {
    continue_as_new_payload(detail::to_payload(input, "the input of the next run"));
  }

 private:
  friend class detail::Replay;  // builds the context its replay runs the code with (Replay::context())
  explicit WorkflowContext(detail::Replay& replay) : replay_(replay) {}
  template <typename R>
  friend class Future;
  friend class TimerFuture;
  template <typename T>
  friend class MessageFuture;
  template <typename R>
  friend class ChildFuture;
  static int step_of(const detail::Awaitable& future) { return future.step_; }
  template <typename R>
  Future<R> start_named(const std::string& name, Json input, const ActivityOptions& options) {
    return Future<R>(*this, schedule_activity(name, std::move(input), options), name);
  }
  int schedule_activity(const std::string& name, Json input, const ActivityOptions& options);
  Json await_activity(int step);
  std::optional<Json> receive_payload(const std::string& topic, std::optional<Duration> timeout);
  int start_timer_step(Duration duration);
  void await_timer(int step);
  int start_receive_step(const std::string& topic);
  Json await_receive(int step);
  std::size_t wait_any_steps(const std::vector<int>& steps);
  void set_event_payload(const std::string& key, Json value);
  template <typename R>
  ChildFuture<R> start_child_named(const std::string& name, const WorkflowId& child_id, Json input,
                                   const ChildOptions& options) {
    return ChildFuture<R>(*this, start_child_step(name, child_id, std::move(input), options), child_id, name);
  }
  int start_child_step(const std::string& name, const WorkflowId& child_id, Json input, const ChildOptions& options);
  Json await_child(int step);
  std::string send_payload(const WorkflowId& workflow_id, const std::string& topic, Json payload,
                           const SendOptions& options);
  [[noreturn]] void continue_as_new_payload(Json input);
  detail::Replay& replay_;
};

template <typename R>
R Future<R>::get() {
  Json result = ctx_->await_activity(step_);
  return detail::from_payload<R>(result, "the result of activity '" + what_ + "'");
}

inline void TimerFuture::get() { ctx_->await_timer(step_); }

template <typename T>
T MessageFuture<T>::get() {
  return detail::from_payload<T>(ctx_->await_receive(step_), "a message of topic '" + topic_ + "'");
}

template <typename R>
R ChildFuture<R>::get() {
  Json result = ctx_->await_child(step_);
  if constexpr (std::is_void_v<R>) {
    return;
  } else {
    return detail::from_payload<R>(result, "the result of child workflow '" + child_id_.str() + "' (" + name_ + ")");
  }
}

namespace detail {

// A registered workflow, type-erased so the runner can replay it from JSON.
struct WorkflowDefinition {
  std::string name;
  std::function<Json(WorkflowContext&, const Json&)> run;
  std::function<void(const Json&)> check_input;  // throws PayloadError when the input does not convert
};

// `make_body()` gives a fresh callable per replay, so no state survives between replays but the journal.
template <typename Input, typename MakeBody>
WorkflowDefinition make_workflow(std::string name, MakeBody make_body) {
  WorkflowDefinition def;
  def.name = name;
  def.run = [name = std::move(name), make_body = std::move(make_body)](WorkflowContext& ctx,
                                                                       const Json& input) -> Json {
    auto typed = from_payload<Input>(input, "the input of workflow '" + name + "'");
    auto body = make_body();
    if constexpr (std::is_void_v<decltype(body(ctx, typed))>) {
      body(ctx, typed);
      return Json();
    } else {
      return to_payload(body(ctx, typed), "a workflow result");
    }
  };
  def.check_input = [name = def.name](const Json& input) {
    (void)from_payload<Input>(input, "the input of workflow '" + name + "'");
  };
  return def;
}

}  // namespace detail
}  // namespace durable
