// ActivityContext: what an activity body sees of the attempt it runs in.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"
#include "durable/options.hpp"

namespace durable {

namespace detail {
struct AttemptState;
class Dispatcher;
}  // namespace detail
class TransactionContext;  // durable/pqxx.hpp: a transactional activity's context

// Heartbeat details are kept in the task row for the next attempt; this bounds them.
inline constexpr std::size_t max_heartbeat_details_bytes = std::size_t{16} * 1024;

class ActivityContext {
 public:
  const WorkflowId& workflow_id() const;
  const std::string& activity_name() const;
  int step() const;     // the call's sequence number inside its workflow
  int attempt() const;  // 1 for the first attempt

  // When this attempt's timeout runs out (steady clock of this process). Each heartbeat moves it
  // to now + timeout: for an activity that heartbeats, the timeout bounds the gap between beats.
  std::chrono::steady_clock::time_point deadline() const;

  // True once the engine is shutting down, or the run no longer wants this activity (it was
  // cancelled, or it ended without awaiting it): finish or bail out early. Turns true within a
  // second of the run's end even for a body that never heartbeats.
  bool cancelled() const;

  // Extends this attempt's lease and deadline, and keeps `details` (at most
  // max_heartbeat_details_bytes as JSON; null keeps the previous ones) for a later attempt.
  // Returns false when the attempt should stop: it timed out, its lease was lost to another
  // worker, or the run was cancelled or ended without awaiting it (then cancelled() is true too). Throws
  // InvalidArgument when the details are too large.
  bool heartbeat(const Json& details = Json());

  // The details of the latest heartbeat of an earlier attempt, or null: resume from there.
  const Json& last_heartbeat() const;

 private:
  friend class detail::Dispatcher;  // builds one for each attempt it runs
  explicit ActivityContext(std::shared_ptr<detail::AttemptState> state);
  std::shared_ptr<detail::AttemptState> state_;
};

namespace detail {

// A registered activity, type-erased so the engine can run it from JSON. Exactly one of `run` and
// `run_in_transaction` is set: the second for a transactional activity (durable/pqxx.hpp).
struct ActivityDefinition {
  std::string name;
  ActivityOptions options;                                                   // declared by the activity
  std::function<Json(ActivityContext&, const Json&)> run;                    // converts, calls the body, converts back
  std::function<Json(TransactionContext&, const Json&)> run_in_transaction;  // the same, in the step's transaction
  std::function<void(const Json&)> check_input;                   // throws PayloadError when the input does not convert
  std::function<std::optional<std::string>(const Json&)> key_of;  // the declared idempotency key, if any
  bool transactional() const { return static_cast<bool>(run_in_transaction); }
};

// An activity body `Out(Context&, const Input&)` behind a JSON interface.
template <typename Context, typename Input, typename F>
std::function<Json(Context&, const Json&)> json_body(const std::string& name, F body) {
  return [body = std::move(body), name](Context& ctx, const Json& input) mutable -> Json {
    auto typed = from_payload<Input>(input, fmt::format("the input of activity '{}'", name));
    using R = decltype(body(ctx, typed));
    if constexpr (std::is_void_v<R>) {
      body(ctx, typed);
      return Json();
    } else {
      return to_payload(body(ctx, typed), "an activity result");
    }
  };
}

// `Context` is ActivityContext, or TransactionContext for a transactional activity.
template <typename Input, typename Context = ActivityContext, typename F>
ActivityDefinition make_activity(std::string name, ActivityOptions options, F body) {
  ActivityDefinition def;
  def.name = name;
  def.options = std::move(options);
  if constexpr (std::is_same_v<Context, ActivityContext>) {
    def.run = json_body<Context, Input>(name, std::move(body));
  } else {
    def.run_in_transaction = json_body<Context, Input>(name, std::move(body));
  }
  def.check_input = [name](const Json& input) {
    (void)from_payload<Input>(input, fmt::format("the input of activity '{}'", name));
  };
  return def;
}

}  // namespace detail
}  // namespace durable
