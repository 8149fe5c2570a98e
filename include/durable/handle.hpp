// WorkflowHandle: one run of a workflow, found from any process. It acts on its own run, also
// after its workflow id was started again: Engine::workflow(id) gives the id's latest run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"
#include "durable/options.hpp"
#include "durable/status.hpp"

namespace durable {

namespace detail {
class EngineCore;
struct EngineAccess;  // src/engine/engine_access.hpp
}  // namespace detail

class UntypedWorkflowHandle {
 public:
  const WorkflowId& id() const noexcept { return id_; }
  const RunId& run_id() const noexcept { return run_id_; }
  WorkflowStatus status() const;

  // Waits until the run ends. Returns the result JSON when it completed; throws WorkflowFailed
  // (or NonDeterminismError) when it failed, WorkflowCancelled, or Timeout when `timeout` runs out.
  // A run that continued as new is followed to the next run, and so on to the last of the chain.
  Json result_json(Duration timeout = std::chrono::hours{24}) const;

  // The latest value the run published under `key` (WorkflowContext::set_event), waiting up to
  // `timeout` for a first one. Empty when none was set in that time, or the run ended without
  // setting one. A run that continued as new passed its events on: the chain's latest run is read.
  // Throws InvalidTopic for a bad key.
  std::optional<Json> get_event_json(const std::string& key, Duration timeout = Duration{0}) const;

  // Asks the run to cancel, for `reason`. Its code sees WorkflowCancelled thrown from its current
  // await (or next durable call), soon, on whichever engine runs it; its activities still
  // unfinished are dropped (running bodies see ActivityContext::cancelled() within a second). The
  // code may catch it and clean up with more activities; the run ends cancelled when the error
  // escapes. Returns false when the run had already ended; true when it runs (asked now, or before:
  // a second ask changes nothing). A run that continued as new passes it on: the chain's running
  // run is asked. Runs::terminate ends a run at once, without its code.
  bool cancel(const std::string& reason = {}) const;

 private:
  friend struct detail::EngineAccess;  // the engine and Runs hand out handles to runs they found or started
  UntypedWorkflowHandle(std::shared_ptr<detail::EngineCore> core, WorkflowId workflow_id, RunId run_id);
  std::shared_ptr<detail::EngineCore> core_;
  WorkflowId id_;
  RunId run_id_;
};

template <typename R = Json>
class WorkflowHandle : public UntypedWorkflowHandle {
 public:
  explicit WorkflowHandle(UntypedWorkflowHandle untyped) : UntypedWorkflowHandle(std::move(untyped)) {}

  R result(Duration timeout = std::chrono::hours{24}) const {
    return detail::from_payload<R>(result_json(timeout), "the result of workflow '" + id().str() + "'");
  }

  // get_event_json, converted to T.
  template <typename T>
  std::optional<T> get_event(const std::string& key, Duration timeout = Duration{0}) const {
    std::optional<Json> value = get_event_json(key, timeout);
    if (!value) return std::nullopt;
    return detail::from_payload<T>(*value, "event '" + key + "' of workflow '" + id().str() + "'");
  }
};

}  // namespace durable
