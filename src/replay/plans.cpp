#include "replay/plans.hpp"

#include <fmt/format.h>

#include <map>

#include "durable/errors.hpp"
#include "journal/events.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

namespace {

// Whether an event of `kind` means the code went on past a step: it opened one, or (receive
// events) closed a receive opened earlier.
bool opens_a_step(journal::EventKind kind) {
  using K = journal::EventKind;
  switch (kind) {
    case K::activity_scheduled:
    case K::timer_started:
    case K::side_effect:
    case K::receive_started:
    case K::message_received:
    case K::receive_timed_out:
    case K::event_set:
    case K::wait_chosen:
    case K::child_started:
    case K::child_start_failed:
    case K::patched: return true;
    default: return false;
  }
}

// Per step, the seq of the last workflow_resumed that retried it: failures and refusals before it
// were voided (the steps after them ran again).
std::map<int, int> voided_before(const std::vector<pg::JournalEvent>& events) {
  std::map<int, int> voided;
  for (const auto& e : events) {
    if (e.kind != journal::EventKind::workflow_resumed) continue;
    const auto resumed = std::get<journal::WorkflowResumed>(journal::decode(e.kind, e.data));
    for (int step : resumed.retry_steps) voided[step] = e.seq;
  }
  return voided;
}

}  // namespace

ResumePlan plan_resume(const std::string& run_id, const std::vector<pg::JournalEvent>& events) {
  JournalCache journal;
  journal.apply(events);
  int last_opened = -1;          // seq of the last event that opened a step
  std::map<int, int> failed_at;  // per step: seq of its last activity_failed
  for (const auto& e : events) {
    if (opens_a_step(e.kind)) last_opened = e.seq;
    if (e.kind == journal::EventKind::activity_failed) failed_at[e.step] = e.seq;
  }
  ResumePlan plan;
  plan.journal_length = journal.next_seq;
  std::vector<int> kept_failures;
  for (std::size_t i = 0; i < journal.steps.size(); ++i) {
    const auto& s = journal.steps[i];
    const int step = static_cast<int>(i);
    if (s.refused) {
      // A refusal that ended the run is voided: the code (fixed, perhaps) makes the call again.
      // One the code caught and went on from stays, like any step before the last.
      if (i + 1 == journal.steps.size()) plan.retry_steps.push_back(step);
      continue;
    }
    if (s.kind != StepKind::activity) continue;
    if (!s.done) plan.reopen_steps.push_back(step);
    if (!s.failed) continue;
    const auto at = failed_at.find(step);
    if ((at == failed_at.end() ? -1 : at->second) > last_opened) {
      plan.retry_steps.push_back(step);
    } else {
      kept_failures.push_back(step);
    }
  }
  if (plan.retry_steps.empty() && !kept_failures.empty()) {
    throw InvalidRunState(fmt::format(
        "run {} cannot be resumed: its code went on after the failure of step {} (it opened steps after it), so "
        "running that step again could not replay; fork it from step {} instead",
        run_id, kept_failures.back(), kept_failures.back()));
  }
  return plan;
}

ForkPlan plan_fork(const std::string& run_id, const std::vector<pg::JournalEvent>& events, std::int64_t asked_step) {
  if (events.empty()) {
    throw InvalidRunState(fmt::format(
        "run {} has no journal to fork (a run kept from before version 9, whose history was deleted then)", run_id));
  }
  JournalCache journal;
  journal.apply(events);
  const int steps = static_cast<int>(journal.steps.size());
  if (asked_step < 0 || asked_step > steps) {
    throw InvalidArgument(
        fmt::format("cannot fork run {} from step {}: its journal has steps 0 to {}; give 0 (start "
                    "over) to {} (after its last step)",
                    run_id, asked_step, steps - 1, steps));
  }
  ForkPlan plan;
  plan.from_step = static_cast<int>(asked_step);  // in range: at most the journal's steps
  const int from_step = plan.from_step;
  // A child that had not ended belongs to the source run: the copy would wait for it for good.
  for (int step = 0; step < from_step; ++step) {
    const auto& s = journal.steps[static_cast<std::size_t>(step)];
    if (s.kind == StepKind::child && !s.done) {
      throw InvalidRunState(fmt::format(
          "cannot fork run {} from step {}: its child '{}' (step {}) had not ended, and it belongs to the source "
          "run; fork from step {} or earlier",
          run_id, from_step, s.child_id, step, step));
    }
  }
  const auto voided = voided_before(events);
  std::vector<bool> finished(static_cast<std::size_t>(from_step), false);
  for (const auto& e : events) {
    const bool own = e.kind == journal::EventKind::workflow_started;
    const bool before = e.step >= 0 && e.step < from_step;
    if (!own && !before) continue;
    const auto resumed = voided.find(e.step);
    const bool voidable = e.kind == journal::EventKind::activity_failed || e.kind == journal::EventKind::call_refused;
    if (voidable && resumed != voided.end() && e.seq < resumed->second) continue;
    if (e.kind == journal::EventKind::activity_completed || e.kind == journal::EventKind::activity_failed) {
      finished[static_cast<std::size_t>(e.step)] = true;
    }
    plan.events.push_back({{"kind", journal::to_text(e.kind)}, {"step", e.step}, {"name", e.name}, {"data", e.data}});
  }
  for (int step = 0; step < from_step; ++step) {
    const auto& s = journal.steps[static_cast<std::size_t>(step)];
    if (s.kind != StepKind::activity || finished[static_cast<std::size_t>(step)]) continue;
    // Its task runs again as its scheduled event says (kept in every event since version 10).
    for (const auto& e : events) {
      if (e.kind == journal::EventKind::activity_scheduled && e.step == step && !e.data.contains("input")) {
        throw InvalidRunState(fmt::format(
            "cannot fork run {} from step {}: step {} is open there and its input was not kept; fork from step {}",
            run_id, from_step, step, step));
      }
    }
    plan.open_steps.push_back(step);
  }
  return plan;
}

}  // namespace durable::detail
