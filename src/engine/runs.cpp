// Runs: the management API. Checks every input before the store writes anything; works out from
// a run's journal what a resume retries and what a fork copies.
#include "durable/runs.hpp"

#include "durable/queues.hpp"
#include "durable/stats.hpp"

#include <fmt/format.h>

#include <charconv>

#include "base/checks.hpp"
#include "base/exceptions.hpp"
#include "base/log.hpp"
#include "base/printable.hpp"
#include "base/uuid.hpp"
#include "engine/engine_access.hpp"
#include "engine/engine_core.hpp"
#include "engine/history_export.hpp"
#include "replay/journal.hpp"
#include "replay/plans.hpp"

namespace durable {

std::string_view to_string(StartedBy started_by) {
  switch (started_by) {
    case StartedBy::call: return "call";
    case StartedBy::schedule: return "schedule";
    case StartedBy::trigger: return "trigger";
    case StartedBy::fork: return "fork";
    case StartedBy::child: return "child";
    case StartedBy::continued: return "continued";
  }
  return "call";
}

namespace {

constexpr int max_page = 1000;

std::string logged_reason(const detail::EngineCore& core, const OperatorAction& action) {
  return detail::loggable(action.reason, core.options().codec != nullptr);
}

void check_limit(int limit, const char* what) {
  if (limit < 1 || limit > max_page) {
    throw InvalidArgument(fmt::format("{} limit {} is out of range: ask for 1 to {} per page", what, limit, max_page));
  }
}

void check_range(const std::optional<TimePoint>& from, const std::optional<TimePoint>& until, const char* what) {
  if (from && until && *from >= *until) {
    throw InvalidArgument(fmt::format("the {} range [from, until) is empty: `from` must be before `until`", what));
  }
}

void check_filter(const RunFilter& f) {
  check_range(f.created_from, f.created_until, "created");
  check_range(f.ended_from, f.ended_until, "ended");
  detail::check_text(f.workflow_name, "the filter's workflow name");
  detail::check_text(f.id_prefix, "the filter's workflow id prefix");
  detail::check_text(f.schedule_id, "the filter's schedule id");
  detail::check_text(f.trigger, "the filter's trigger");
  if (f.app_version) detail::check_text(*f.app_version, "the filter's app version");
  if (!f.parent_run_id.empty() && !detail::is_uuid(f.parent_run_id.str())) {
    throw InvalidArgument(fmt::format("parent run id '{}' is not a run id (a uuid such as a handle's run_id())",
                                      detail::printable(f.parent_run_id.str())));
  }
}

// A cursor is "<created_at in us>.<run id>" of the last run of the page before: a time the clock
// can hold (system_clock's nanoseconds reach 2262), so one beyond it was never a next_cursor.
std::pair<std::int64_t, std::string> parse_cursor(const std::string& cursor) {
  const auto dot = cursor.find('.');
  const auto bad = [&] {
    return InvalidArgument(
        fmt::format("cursor '{}' is malformed: pass RunPage::next_cursor of the page before as it is (a time in "
                    "microseconds from 1970 to 2262, a dot, a run id)",
                    detail::printable(cursor)));
  };
  if (dot == std::string::npos || dot == 0 || dot > 19) throw bad();
  std::int64_t us = 0;
  const auto [end, error] = std::from_chars(cursor.data(), cursor.data() + dot, us);
  constexpr std::int64_t max_us =
      std::chrono::duration_cast<std::chrono::microseconds>(TimePoint::max().time_since_epoch()).count();
  if (error != std::errc() || end != cursor.data() + dot || us < 0 || us > max_us) throw bad();
  std::string run = cursor.substr(dot + 1);
  if (!detail::is_uuid(run)) throw bad();
  return {us, std::move(run)};
}

std::int64_t us_of(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string describe(const RunInfo& run) {
  return fmt::format("run {} of workflow '{}' is {}", run.run_id, detail::printable(run.workflow_id.str()),
                     to_string(run.status));
}

std::vector<pg::JournalEvent> journal_of(detail::EngineCore& core, const std::string& run_id) {
  return core.store().read_journal(run_id, 0).events;
}

}  // namespace

Runs::Runs(std::shared_ptr<detail::EngineCore> core) : core_(std::move(core)) {}

RunPage Runs::list(const RunQuery& query) const {
  check_limit(query.limit, "list");
  check_filter(query.filter);
  std::optional<std::int64_t> cursor_us;
  std::string cursor_run;
  if (!query.cursor.empty()) std::tie(cursor_us, cursor_run) = parse_cursor(query.cursor);
  return core_->run_store().list(query.filter, query.limit, cursor_us, cursor_run);
}

std::map<WorkflowStatus, std::int64_t> Runs::count_by_status(const RunFilter& filter, std::int64_t at_most) const {
  check_filter(filter);
  if (at_most < 0) {
    throw InvalidArgument(fmt::format("count_by_status: at_most = {} is negative: use 0 to count exactly", at_most));
  }
  return core_->run_store().count_by_status(filter, at_most);
}

RunInfo Runs::get(const RunId& run_id) const {
  auto run = detail::is_uuid(run_id.str()) ? core_->run_store().get(run_id.str()) : std::nullopt;
  if (!run) throw WorkflowNotFound::run(run_id);
  return *run;
}

RunInfo Runs::latest(const WorkflowId& workflow_id) const {
  detail::check_workflow_id(workflow_id.str());
  auto run = core_->run_store().latest(workflow_id.str());
  if (!run) throw WorkflowNotFound(workflow_id);
  return *run;
}

History Runs::history(const RunId& run_id, const HistoryQuery& query) const {
  check_limit(query.limit, "history");
  if (query.from_seq < 0 || query.from_seq > std::numeric_limits<int>::max()) {
    throw InvalidArgument(fmt::format(
        "history from_seq {} is out of range: events are numbered from 0 to {} (History::next_seq of the page before)",
        query.from_seq, std::numeric_limits<int>::max()));
  }
  if (!core_->run_store().exists(run_id.str())) throw WorkflowNotFound::run(run_id);
  return core_->run_store().history(run_id.str(), static_cast<int>(query.from_seq), query.limit);
}

Json Runs::export_history(const RunId& run_id) const {
  return detail::export_history(core_->run_store(), run_id.str());
}

UntypedWorkflowHandle Runs::resume(const RunId& id, const OperatorAction& action) {
  detail::check_action(action);
  const RunInfo run = get(id);
  const std::string& run_id = id.str();
  if (run.blocked) {
    if (!core_->run_store().unblock(run_id, action)) {
      throw InvalidRunState(fmt::format("run {} changed while it was being resumed: read it again", run_id));
    }
    core_->signals().workflow_work.notify_one();
    detail::logger().info("blocked run {} of workflow '{}' resumed by '{}': {}", run_id, run.workflow_id, action.actor,
                          logged_reason(*core_, action));
    return detail::EngineAccess::handle(core_, run.workflow_id.str(), run_id);
  }
  if (run.status != WorkflowStatus::failed) {
    throw InvalidRunState(fmt::format("{}: only a failed or blocked run can be resumed{}", describe(run),
                                      run.status == WorkflowStatus::running ? "" : "; fork it to run it again"));
  }
  if (!run.latest) {
    throw InvalidRunState(
        fmt::format("{}, and a newer run of its id exists: resume that one, or fork this one", describe(run)));
  }
  const detail::ResumePlan plan = detail::plan_resume(run_id, journal_of(*core_, run_id));
  if (!core_->run_store().resume(run_id, plan.journal_length, plan.retry_steps, plan.reopen_steps, action)) {
    throw InvalidRunState(fmt::format("run {} changed while it was being resumed: read it again", run_id));
  }
  core_->signals().workflow_work.notify_one();
  core_->signals().task_work.notify();
  detail::logger().info("run {} of workflow '{}' resumed by '{}': {}", run_id, run.workflow_id, action.actor,
                        logged_reason(*core_, action));
  return detail::EngineAccess::handle(core_, run.workflow_id.str(), run_id);
}

UntypedWorkflowHandle Runs::fork(const RunId& id, std::int64_t asked_step, const OperatorAction& action,
                                 const ForkOptions& options) {
  detail::check_action(action);
  if (!options.workflow_id.empty()) detail::check_workflow_id(options.workflow_id.str());
  const RunInfo source = get(id);
  const std::string& run_id = id.str();
  detail::ForkPlan plan = detail::plan_fork(run_id, journal_of(*core_, run_id), asked_step);
  pg::ForkedRun run;
  run.workflow_id = (options.workflow_id.empty() ? source.workflow_id : options.workflow_id).str();
  run.run_id = detail::time_ordered_uuid();
  run.name = source.workflow_name;
  run.source_run_id = run_id;
  run.from_step = plan.from_step;
  run.input = source.input;
  run.replace_latest = options.workflow_id.empty() || options.workflow_id == source.workflow_id;
  run.events = std::move(plan.events);
  run.open_steps = plan.open_steps;
  if (!core_->run_store().fork(run, action)) {
    auto existing = core_->run_store().latest(run.workflow_id);  // shown as stored: no codec needed
    if (run.replace_latest) {
      throw InvalidRunState(fmt::format(
          "run {} of workflow '{}' is running: cancel it first, or fork under a new id (ForkOptions::workflow_id)",
          existing ? existing->run_id : RunId{"?"}, detail::printable(run.workflow_id)));
    }
    throw WorkflowAlreadyStarted(run.workflow_id, existing ? existing->run_id : RunId(),
                                 existing ? std::string(to_string(existing->status)) : std::string("unknown"));
  }
  core_->signals().workflow_work.notify_one();
  core_->signals().task_work.notify();
  detail::logger().info("run {} forked from step {} of run {} by '{}': {}", run.run_id, plan.from_step, run_id,
                        action.actor, logged_reason(*core_, action));
  return detail::EngineAccess::handle(core_, run.workflow_id, run.run_id);
}

bool Runs::cancel(const RunId& run_id, const OperatorAction& action) {
  detail::check_action(action);
  RunId asked = run_id;
  get(asked);  // WorkflowNotFound
  for (;;) {
    if (core_->run_store().request_cancel(asked.str(), action)) return true;
    const RunInfo run = get(asked);
    if (run.status != WorkflowStatus::continued) return false;
    asked = run.continued_as_run;  // the chain goes on there
  }
}

bool Runs::terminate(const RunId& run_id, const OperatorAction& action) {
  detail::check_action(action);
  get(run_id);  // WorkflowNotFound
  const bool terminated = core_->run_store().terminate(run_id.str(), action);
  if (terminated) core_->run_cancelled(run_id.str());
  return terminated;
}

void Runs::remove(const RunId& run_id, const OperatorAction& action) {
  detail::check_action(action);
  const RunInfo run = get(run_id);
  if (run.status == WorkflowStatus::running || !core_->run_store().remove(run_id.str(), action)) {
    const RunInfo now = get(run_id);  // WorkflowNotFound when it was deleted meanwhile
    throw InvalidRunState(fmt::format("{}: only an ended run can be deleted; cancel it first", describe(now)));
  }
}

PruneOutcome Runs::prune(TimePoint ended_before, const OperatorAction& action, bool dry_run) {
  detail::check_action(action);
  return core_->run_store().prune(us_of(ended_before), action, dry_run);
}

std::int64_t Runs::expire_idempotency_results(TimePoint created_before, const OperatorAction& action) {
  detail::check_action(action);
  return core_->run_store().expire_idempotency_results(us_of(created_before), action);
}

Stats Runs::stats() const {
  Stats stats = core_->run_store().stats();
  stats.queues = Queues(core_).list();
  return stats;
}

std::vector<AuditEntry> Runs::audit(const AuditQuery& query) const {
  check_limit(query.limit, "audit");
  return core_->run_store().audit(query.limit, query.before);
}

}  // namespace durable
