#include "replay/journal.hpp"

#include <fmt/format.h>

#include "durable/errors.hpp"
#include "journal/events.hpp"

namespace durable::detail {

std::string describe(StepKind kind, const std::string& name) {
  switch (kind) {
    case StepKind::activity: return fmt::format("activity '{}'", name);
    case StepKind::timer: return "a timer (sleep)";
    case StepKind::side_effect: return name + "()";
    case StepKind::receive: return fmt::format("receive('{}')", name);
    case StepKind::publish: return fmt::format("set_event('{}')", name);
    case StepKind::wait: return fmt::format("wait_any over steps {}", name);
    case StepKind::child: return fmt::format("child workflow '{}'", name);
    case StepKind::patch: return fmt::format("patched('{}')", name);
  }
  return "?";
}

std::string nondeterminism_message(const std::string& workflow_id, const std::string& workflow_name, int step,
                                   const std::string& journaled, const std::string& asked) {
  return fmt::format(
      "workflow '{}' ({}) is not deterministic: at sequence number {} the journal holds {} but the code asked for {}. "
      "Workflow code must make the same calls in the same order on every replay: wrap the change in "
      "ctx.patched(\"change-id\") (docs/versioning.md), or start new runs under a new workflow name",
      workflow_id, workflow_name, step, journaled, asked);
}

void drop(StepRecord& step) {
  // Whatever it got before the cancel was seen, the code was told it was cancelled.
  step.done = step.failed = step.dropped = true;
  step.value = Json();
  step.error_type = "durable::WorkflowCancelled";
  step.error_message = "the run was cancelled before this activity finished; it was dropped";
}

void JournalCache::apply(const std::vector<pg::JournalEvent>& events) {
  for (const auto& event : events) apply(event);
}

// Applies one event's decoded data to the cache: one overload per kind.
struct JournalCache::Applier {
  JournalCache& j;
  const pg::JournalEvent& e;

  StepRecord& at() {
    if (e.step < 0 || e.step >= static_cast<int>(j.steps.size())) {
      throw Error(fmt::format("journal event {} ({}) names step {}, which was never scheduled", e.seq,
                              journal::to_text(e.kind), e.step));
    }
    return j.steps[static_cast<std::size_t>(e.step)];
  }
  StepRecord& open(StepKind kind) {
    if (e.step != static_cast<int>(j.steps.size())) {
      throw Error(
          fmt::format("journal event {} ({}) opens step {} out of order", e.seq, journal::to_text(e.kind), e.step));
    }
    StepRecord& r = j.steps.emplace_back();
    r.kind = kind;
    r.name = e.name;
    return r;
  }
  StepRecord& outcome(bool failed) {  // an activity's or a child's end
    StepRecord& r = at();
    r.done = true;
    r.failed = failed;
    r.outside_outcome_seq = e.seq;
    return r;
  }
  // A receive's end opens its step too when the receive found a message, or had no time to wait, at once.
  StepRecord& receive_outcome(bool empty) {
    const bool opens = e.step == static_cast<int>(j.steps.size());
    StepRecord& r = opens ? open(StepKind::receive) : at();
    if (opens) r.fire_at_us = -1;  // it never waited: no deadline
    r.done = true;
    r.empty = empty;
    return r;
  }

  void operator()(journal::WorkflowStarted& d) {
    j.input = std::move(d.input);
    j.schedule = d.schedule.value_or(Json());
    j.depth = d.depth.value_or(0);
  }
  void operator()(journal::ActivityScheduled&) { open(StepKind::activity); }
  void operator()(journal::ActivityCompleted& d) {
    if (at().dropped) return;  // a late outcome: the run had given up on it
    StepRecord& r = outcome(false);
    r.value = std::move(d.result);
    r.attempts = d.attempts;
  }
  void operator()(journal::ActivityFailed& d) {
    if (at().dropped) return;
    StepRecord& r = outcome(true);
    r.error_type = std::move(d.error_type);
    r.error_message = std::move(d.error_message);
    r.attempts = d.attempts;
  }
  void operator()(journal::TimerStarted& d) { open(StepKind::timer).fire_at_us = d.fire_at_us; }
  void operator()(journal::TimerFired&) { at().done = true; }
  void operator()(journal::SideEffect& d) {
    StepRecord& r = open(StepKind::side_effect);
    r.done = true;
    r.value = std::move(d.value);
  }
  void operator()(journal::ReceiveStarted& d) { open(StepKind::receive).fire_at_us = d.fire_at_us; }
  void operator()(journal::MessageReceived& d) { receive_outcome(false).value = std::move(d.payload); }
  void operator()(journal::ReceiveTimedOut&) { receive_outcome(true); }
  void operator()(journal::EventSet&) { open(StepKind::publish).done = true; }
  void operator()(journal::Patched&) { open(StepKind::patch).done = true; }
  void operator()(journal::WaitChosen& d) {
    StepRecord& r = open(StepKind::wait);
    r.done = true;
    r.value = d.index;
  }
  void operator()(journal::CallRefused& d) {
    if (d.call != "activity" && d.call != "child") {
      throw Error(
          fmt::format("journal event {} (call_refused) names a call '{}', neither activity nor child", e.seq, d.call));
    }
    StepRecord& r = open(d.call == "activity" ? StepKind::activity : StepKind::child);
    r.refused = r.done = r.failed = true;
    r.child_id = d.workflow_id.value_or("");
    r.error_type = std::move(d.error_type);
    r.error_message = std::move(d.error_message);
  }
  void operator()(journal::ChildStarted& d) { open(StepKind::child).child_id = d.workflow_id; }
  void operator()(journal::ChildStartFailed& d) {
    StepRecord& r = open(StepKind::child);
    r.child_id = d.workflow_id;
    r.done = r.failed = true;
    r.status = "taken";
    r.value = e.data;
  }
  void operator()(journal::ChildCompleted& d) { outcome(false).value = std::move(d.result); }
  void operator()(journal::ChildFailed& d) {
    StepRecord& r = outcome(true);
    r.status = std::move(d.status);
    r.error_type = std::move(d.error_type);
    r.error_message = std::move(d.error_message);
  }
  void operator()(journal::CancelRequested& d) { j.cancel_reason = std::move(d.reason); }
  void operator()(journal::CancelDelivered& d) {
    j.cancel_delivered = CancelDelivery{d.at_step, d.awaited};
    for (int step : d.dropped) drop(j.steps.at(static_cast<std::size_t>(step)));
  }
  void operator()(journal::WorkflowResumed& d) { j.resume(e.seq, d.retry_steps); }
  // The run's end: nothing to replay.
  void operator()(journal::WorkflowCompleted&) {}
  void operator()(journal::WorkflowFailed&) {}
  void operator()(journal::WorkflowCancelled&) {}
  void operator()(journal::WorkflowContinued&) {}
};

void JournalCache::apply(const pg::JournalEvent& e) {
  if (e.seq != next_seq) {
    throw Error(fmt::format("journal gap: expected event {} but read {}", next_seq, e.seq));
  }
  ++next_seq;
  journal::EventData data;
  try {
    data = journal::decode(e.kind, e.data);
  } catch (const Error& error) {
    throw Error(fmt::format("journal event {}: {}", e.seq, error.what()));
  }
  std::visit(Applier{*this, e}, data);
}

void JournalCache::resume(int seq, const std::vector<int>& retry_steps) {
  // The failures of these steps no longer count: they run again (Runs::resume).
  for (int step : retry_steps) {
    StepRecord& r = steps.at(static_cast<std::size_t>(step));
    if (r.refused) {
      // A refused call that ended the run: voided, the code makes the call again as new.
      if (static_cast<std::size_t>(step) + 1 != steps.size()) {
        throw Error(
            fmt::format("journal event {} (workflow_resumed) voids refused step {}, which is not the last", seq, step));
      }
      steps.pop_back();
      continue;
    }
    StepRecord fresh;
    fresh.kind = r.kind;
    fresh.name = r.name;
    r = std::move(fresh);
  }
}

}  // namespace durable::detail
