#include "durable/errors.hpp"

#include <fmt/format.h>

#include "base/printable.hpp"

namespace durable {

WorkflowAlreadyStarted::WorkflowAlreadyStarted(WorkflowId workflow_id, RunId run_id, std::string status)
    : Error(fmt::format("workflow id '{}' is already taken by run {} (status: {}); "
                        "choose another id, or read the existing run with Engine::workflow()",
                        detail::printable(workflow_id.str()), run_id, status)),
      workflow_id_(std::move(workflow_id)),
      run_id_(std::move(run_id)),
      status_(std::move(status)) {}

DuplicateStart::DuplicateStart(const std::string& deduplication_key, WorkflowId workflow_id, RunId run_id)
    : Error(fmt::format("deduplication key '{}' is held by run {} of workflow '{}', queued or running: nothing was "
                        "started; read that run with Engine::workflow_run, or use start_or_find to get it",
                        detail::printable(deduplication_key), run_id, detail::printable(workflow_id.str()))),
      workflow_id_(std::move(workflow_id)),
      run_id_(std::move(run_id)) {}

WorkflowNotFound::WorkflowNotFound(const WorkflowId& workflow_id)
    : Error(fmt::format("no workflow with id '{}'", detail::printable(workflow_id.str()))) {}

WorkflowNotFound::WorkflowNotFound(const Message& message) : Error(message.text) {}

WorkflowNotFound WorkflowNotFound::run(const RunId& run_id) {
  return WorkflowNotFound(Message{fmt::format(
      "no run with run id '{}' (run ids are uuids such as a handle's run_id(); deleted and pruned runs are gone)",
      detail::printable(run_id.str()))});
}

NonDeterminismError::NonDeterminismError(const std::string& message, int step, std::string journaled, std::string asked)
    : Error(message), step_(step), journaled_(std::move(journaled)), asked_(std::move(asked)) {}

WorkflowEnded::WorkflowEnded(WorkflowId workflow_id, std::string status)
    : Error(fmt::format("workflow '{}' has ended (status: {}) and takes no more messages; send to a running "
                        "workflow, or start a new run under the id first",
                        workflow_id, status)),
      workflow_id_(std::move(workflow_id)),
      status_(std::move(status)) {}

ScheduleAlreadyExists::ScheduleAlreadyExists(const std::string& schedule_id)
    : Error(fmt::format("a schedule with id '{}' exists already: update it with Schedules::update(), or pick "
                        "another id",
                        schedule_id)) {}

ScheduleNotFound::ScheduleNotFound(const std::string& schedule_id)
    : Error(fmt::format("no schedule with id '{}'", schedule_id)) {}

ActivityFailed::ActivityFailed(std::string activity, std::string error_type, std::string error_message, int attempts)
    : Error(fmt::format("activity '{}' failed after {} attempt{}: {}: {}", activity, attempts, attempts == 1 ? "" : "s",
                        error_type, error_message)),
      activity_(std::move(activity)),
      error_type_(std::move(error_type)),
      error_message_(std::move(error_message)),
      attempts_(attempts) {}

ChildWorkflowFailed::ChildWorkflowFailed(WorkflowId workflow_id, std::string workflow_name, std::string status,
                                         std::string error_type, std::string error_message)
    : Error(fmt::format("child workflow '{}' ({}) {}: {}: {}", workflow_id, workflow_name,
                        status == "cancelled" ? "was cancelled" : "failed", error_type, error_message)),
      workflow_id_(std::move(workflow_id)),
      workflow_name_(std::move(workflow_name)),
      status_(std::move(status)),
      error_type_(std::move(error_type)),
      error_message_(std::move(error_message)) {}

namespace {
std::string compensation_failures(const std::vector<FailedCompensation>& failures, std::size_t compensations,
                                  const std::string& cause) {
  std::string text = fmt::format("{} of {} compensation{} failed for good:", failures.size(), compensations,
                                 compensations == 1 ? "" : "s");
  for (const auto& f : failures) {
    const std::string ran = f.attempts == 0 ? std::string("refused, never run")
                                            : fmt::format("after {} attempt{}", f.attempts, f.attempts == 1 ? "" : "s");
    text += fmt::format("{} activity '{}' ({}: {}; {})", &f == &failures.front() ? "" : ";", f.activity, f.error_type,
                        f.error_message, ran);
  }
  if (!cause.empty()) text += "; compensating for " + cause;
  return text;
}
}  // namespace

CompensationFailed::CompensationFailed(std::vector<FailedCompensation> failures, std::size_t compensations,
                                       std::string cause)
    : Error(compensation_failures(failures, compensations, cause)),
      failures_(std::move(failures)),
      compensations_(compensations),
      cause_(std::move(cause)) {}

WorkflowFailed::WorkflowFailed(WorkflowId workflow_id, std::string error_type, const std::string& error_message)
    : Error(error_message), workflow_id_(std::move(workflow_id)), error_type_(std::move(error_type)) {}

WorkflowCancelled::WorkflowCancelled(const WorkflowId& workflow_id, std::string reason)
    : Error(reason.empty() ? fmt::format("workflow '{}' was cancelled", workflow_id)
                           : fmt::format("workflow '{}' was cancelled: {}", workflow_id, reason)),
      reason_(std::move(reason)) {}

}  // namespace durable
