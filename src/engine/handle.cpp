#include "durable/handle.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/exceptions.hpp"
#include "engine/engine_core.hpp"

namespace durable {

std::string_view to_string(WorkflowStatus status) {
  switch (status) {
    case WorkflowStatus::running: return "running";
    case WorkflowStatus::completed: return "completed";
    case WorkflowStatus::failed: return "failed";
    case WorkflowStatus::cancelled: return "cancelled";
    case WorkflowStatus::continued: return "continued";
  }
  return "unknown";
}

namespace {
WorkflowStatus public_status(journal::RunStatus status) {
  switch (status) {
    case journal::RunStatus::running: return WorkflowStatus::running;
    case journal::RunStatus::completed: return WorkflowStatus::completed;
    case journal::RunStatus::failed: return WorkflowStatus::failed;
    case journal::RunStatus::cancelled: return WorkflowStatus::cancelled;
    case journal::RunStatus::continued: return WorkflowStatus::continued;
  }
  return WorkflowStatus::running;
}

// The run that continued run `row` (the commit that ended it started the next).
std::string next_in_chain(const pg::WorkflowRow& row) { return row.result.at("continued_as").get<std::string>(); }
}  // namespace

UntypedWorkflowHandle::UntypedWorkflowHandle(std::shared_ptr<detail::EngineCore> core, WorkflowId workflow_id,
                                             RunId run_id)
    : core_(std::move(core)), id_(std::move(workflow_id)), run_id_(std::move(run_id)) {}

WorkflowStatus UntypedWorkflowHandle::status() const {
  auto row = core_->store().read_run(run_id_.str());
  if (!row) throw WorkflowNotFound::run(run_id_);
  return public_status(row->status);
}

Json UntypedWorkflowHandle::result_json(Duration timeout) const {
  detail::check_timer_duration(timeout, "result()'s timeout");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string run_id = run_id_.str();
  for (;;) {
    const auto ended = core_->signals().ended.of(run_id);
    const auto seen = ended->generation();  // before the read, so no end is missed
    auto row = core_->store().read_run(run_id);
    if (!row) throw WorkflowNotFound::run(RunId{run_id});
    switch (public_status(row->status)) {
      case WorkflowStatus::completed: return row->result;
      case WorkflowStatus::failed:
        if (row->error_type == detail::error_info(NonDeterminismError("")).type) {
          throw NonDeterminismError(row->error_message);
        }
        throw WorkflowFailed(id_, row->error_type, row->error_message);
      case WorkflowStatus::cancelled: throw WorkflowCancelled(id_, row->error_message);  // the reason, if one was given
      case WorkflowStatus::continued: run_id = next_in_chain(*row); continue;
      case WorkflowStatus::running: break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      throw Timeout(
          fmt::format("workflow '{}' still running after {}ms; the run goes on, wait again or check "
                      "status() later",
                      id_, timeout.count()));
    }
    // Runs that end anywhere wake us (the LISTEN session, or this process's own ends); polling is
    // only the safety net.
    core_->listen_once();
    ended->wait_for(seen,
                    std::min<std::chrono::steady_clock::duration>(deadline - now, core_->options().poll_interval));
  }
}

std::optional<Json> UntypedWorkflowHandle::get_event_json(const std::string& key, Duration timeout) const {
  detail::check_event_key(key);
  detail::check_timer_duration(timeout, "get_event()'s timeout");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string run_id = run_id_.str();
  for (;;) {
    const auto seen = core_->signals().events.generation();  // before the read, so no publish is missed
    const pg::EventRead read = core_->store().read_event(run_id, key);
    if (!read.status) throw WorkflowNotFound::run(RunId{run_id});
    if (*read.status == journal::RunStatus::continued) {  // the next run has its events, and newer ones
      auto row = core_->store().read_run(run_id);
      if (!row) throw WorkflowNotFound::run(RunId{run_id});
      run_id = next_in_chain(*row);
      continue;
    }
    if (read.value) return read.value;
    const auto now = std::chrono::steady_clock::now();
    if (*read.status != journal::RunStatus::running || now >= deadline) return std::nullopt;
    // Woken by the NOTIFY of a commit that published (anywhere); polling is only the safety net.
    core_->listen_once();
    core_->signals().events.wait_for(
        seen, std::min<std::chrono::steady_clock::duration>(deadline - now, core_->options().poll_interval));
  }
}

bool UntypedWorkflowHandle::cancel(const std::string& reason) const {
  // Its end, when its code has cleaned up, wakes result() as any other end does.
  std::string run_id = run_id_.str();
  for (;;) {
    if (core_->store().request_cancel(run_id, reason)) return true;
    auto row = core_->store().read_run(run_id);
    if (!row || row->status != journal::RunStatus::continued) return false;
    run_id = next_in_chain(*row);  // asked of the run that goes on
  }
}

}  // namespace durable
