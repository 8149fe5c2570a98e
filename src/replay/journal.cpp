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

void JournalCache::apply(const pg::JournalEvent& e) {
  if (e.seq != next_seq) {
    throw Error(fmt::format("journal gap: expected event {} but read {}", next_seq, e.seq));
  }
  ++next_seq;
  auto at = [&]() -> StepRecord& {
    if (e.step < 0 || e.step >= static_cast<int>(steps.size())) {
      throw Error(fmt::format("journal event {} ({}) names step {}, which was never scheduled", e.seq,
                              journal::to_text(e.kind), e.step));
    }
    return steps[static_cast<std::size_t>(e.step)];
  };
  auto open = [&](StepKind kind) -> StepRecord& {
    if (e.step != static_cast<int>(steps.size())) {
      throw Error(
          fmt::format("journal event {} ({}) opens step {} out of order", e.seq, journal::to_text(e.kind), e.step));
    }
    StepRecord& r = steps.emplace_back();
    r.kind = kind;
    r.name = e.name;
    return r;
  };
  journal::EventData data;
  try {
    data = journal::decode(e.kind, e.data);
  } catch (const Error& error) {
    throw Error(fmt::format("journal event {}: {}", e.seq, error.what()));
  }
  auto outcome = [&](bool failed) -> StepRecord& {  // an activity's or a child's end
    StepRecord& r = at();
    r.done = true;
    r.failed = failed;
    r.outside_outcome_seq = e.seq;
    return r;
  };
  std::visit(
      [&](auto& d) {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, journal::WorkflowStarted>) {
          input = std::move(d.input);
          schedule = d.schedule.value_or(Json());
          depth = d.depth.value_or(0);
        } else if constexpr (std::is_same_v<D, journal::ActivityScheduled>) {
          open(StepKind::activity);
        } else if constexpr (std::is_same_v<D, journal::ActivityCompleted>) {
          if (at().dropped) return;  // a late outcome: the run had given up on it
          StepRecord& r = outcome(false);
          r.value = std::move(d.result);
          r.attempts = d.attempts;
        } else if constexpr (std::is_same_v<D, journal::ActivityFailed>) {
          if (at().dropped) return;
          StepRecord& r = outcome(true);
          r.error_type = std::move(d.error_type);
          r.error_message = std::move(d.error_message);
          r.attempts = d.attempts;
        } else if constexpr (std::is_same_v<D, journal::TimerStarted>) {
          open(StepKind::timer).fire_at_us = d.fire_at_us;
        } else if constexpr (std::is_same_v<D, journal::TimerFired>) {
          at().done = true;
        } else if constexpr (std::is_same_v<D, journal::SideEffect>) {
          StepRecord& r = open(StepKind::side_effect);
          r.done = true;
          r.value = std::move(d.value);
        } else if constexpr (std::is_same_v<D, journal::ReceiveStarted>) {
          open(StepKind::receive).fire_at_us = d.fire_at_us;
        } else if constexpr (std::is_same_v<D, journal::MessageReceived> ||
                             std::is_same_v<D, journal::ReceiveTimedOut>) {
          // Opens its step too when the receive found a message, or had no time to wait, at once.
          const bool opens = e.step == static_cast<int>(steps.size());
          StepRecord& r = opens ? open(StepKind::receive) : at();
          if (opens) r.fire_at_us = -1;  // it never waited: no deadline
          r.done = true;
          r.empty = std::is_same_v<D, journal::ReceiveTimedOut>;
          if constexpr (std::is_same_v<D, journal::MessageReceived>) r.value = std::move(d.payload);
        } else if constexpr (std::is_same_v<D, journal::EventSet>) {
          open(StepKind::publish).done = true;
        } else if constexpr (std::is_same_v<D, journal::Patched>) {
          open(StepKind::patch).done = true;
        } else if constexpr (std::is_same_v<D, journal::WaitChosen>) {
          StepRecord& r = open(StepKind::wait);
          r.done = true;
          r.value = d.index;
        } else if constexpr (std::is_same_v<D, journal::CallRefused>) {
          if (d.call != "activity" && d.call != "child") {
            throw Error(fmt::format("journal event {} (call_refused) names a call '{}', neither activity nor child",
                                    e.seq, d.call));
          }
          StepRecord& r = open(d.call == "activity" ? StepKind::activity : StepKind::child);
          r.refused = r.done = r.failed = true;
          r.child_id = d.workflow_id.value_or("");
          r.error_type = std::move(d.error_type);
          r.error_message = std::move(d.error_message);
        } else if constexpr (std::is_same_v<D, journal::ChildStarted>) {
          open(StepKind::child).child_id = d.workflow_id;
        } else if constexpr (std::is_same_v<D, journal::ChildStartFailed>) {
          StepRecord& r = open(StepKind::child);
          r.child_id = d.workflow_id;
          r.done = r.failed = true;
          r.status = "taken";
          r.value = e.data;
        } else if constexpr (std::is_same_v<D, journal::ChildCompleted>) {
          outcome(false).value = std::move(d.result);
        } else if constexpr (std::is_same_v<D, journal::ChildFailed>) {
          StepRecord& r = outcome(true);
          r.status = std::move(d.status);
          r.error_type = std::move(d.error_type);
          r.error_message = std::move(d.error_message);
        } else if constexpr (std::is_same_v<D, journal::CancelRequested>) {
          cancel_reason = std::move(d.reason);
        } else if constexpr (std::is_same_v<D, journal::CancelDelivered>) {
          cancel_delivered = CancelDelivery{d.at_step, d.awaited};
          for (int step : d.dropped) drop(steps.at(static_cast<std::size_t>(step)));
        } else if constexpr (std::is_same_v<D, journal::WorkflowResumed>) {
          resume(e.seq, d.retry_steps);
        }
        // workflow_completed / _failed / _cancelled / _continued end the run: nothing to replay.
      },
      data);
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
