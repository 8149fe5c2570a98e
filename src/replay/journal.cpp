#include "replay/journal.hpp"

#include <fmt/format.h>

#include "durable/errors.hpp"

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
                              pg::to_text(e.kind), e.step));
    }
    return steps[static_cast<std::size_t>(e.step)];
  };
  auto open = [&](StepKind kind) -> StepRecord& {
    if (e.step != static_cast<int>(steps.size())) {
      throw Error(fmt::format("journal event {} ({}) opens step {} out of order", e.seq, pg::to_text(e.kind), e.step));
    }
    StepRecord& r = steps.emplace_back();
    r.kind = kind;
    r.name = e.name;
    return r;
  };
  switch (e.kind) {
    case pg::EventKind::workflow_started:
      input = e.data.at("input");
      schedule = e.data.value("schedule", Json());
      depth = e.data.value("depth", 0);
      break;
    case pg::EventKind::activity_scheduled: open(StepKind::activity); break;
    case pg::EventKind::activity_completed: {
      StepRecord& r = at();
      if (r.dropped) break;  // a late outcome: the run had given up on it
      r.done = true;
      r.outside_outcome_seq = e.seq;
      r.value = e.data.at("result");
      r.attempts = e.data.value("attempts", 1);
      break;
    }
    case pg::EventKind::activity_failed: {
      StepRecord& r = at();
      if (r.dropped) break;
      r.done = r.failed = true;
      r.outside_outcome_seq = e.seq;
      r.error_type = e.data.value("error_type", "");
      r.error_message = e.data.value("error_message", "");
      r.attempts = e.data.value("attempts", 1);
      break;
    }
    case pg::EventKind::timer_started:
      open(StepKind::timer).fire_at_us = e.data.at("fire_at_us").get<std::int64_t>();
      break;
    case pg::EventKind::timer_fired: at().done = true; break;
    case pg::EventKind::side_effect: {
      StepRecord& r = open(StepKind::side_effect);
      r.done = true;
      r.value = e.data.at("value");
      break;
    }
    case pg::EventKind::receive_started:
      open(StepKind::receive).fire_at_us = e.data.at("fire_at_us").get<std::int64_t>();
      break;
    case pg::EventKind::message_received:
    case pg::EventKind::receive_timed_out: {
      // Opens its step too when the receive found a message, or had no time to wait, at once.
      const bool opens = e.step == static_cast<int>(steps.size());
      StepRecord& r = opens ? open(StepKind::receive) : at();
      if (opens) r.fire_at_us = -1;  // it never waited: no deadline
      r.done = true;
      r.empty = e.kind == pg::EventKind::receive_timed_out;
      if (!r.empty) r.value = e.data.at("payload");
      break;
    }
    case pg::EventKind::event_set: open(StepKind::publish).done = true; break;
    case pg::EventKind::patched: open(StepKind::patch).done = true; break;
    case pg::EventKind::wait_chosen: {
      StepRecord& r = open(StepKind::wait);
      r.done = true;
      r.value = e.data.at("index");
      break;
    }
    case pg::EventKind::call_refused: {
      const std::string call = e.data.value("call", "");
      if (call != "activity" && call != "child") {
        throw Error(
            fmt::format("journal event {} (call_refused) names a call '{}', neither activity nor child", e.seq, call));
      }
      StepRecord& r = open(call == "activity" ? StepKind::activity : StepKind::child);
      r.refused = r.done = r.failed = true;
      r.child_id = e.data.value("workflow_id", "");
      r.error_type = e.data.value("error_type", "");
      r.error_message = e.data.value("error_message", "");
      break;
    }
    case pg::EventKind::child_started: open(StepKind::child).child_id = e.data.at("workflow_id"); break;
    case pg::EventKind::child_start_failed: {
      StepRecord& r = open(StepKind::child);
      r.child_id = e.data.at("workflow_id");
      r.done = r.failed = true;
      r.status = "taken";
      r.value = e.data;
      break;
    }
    case pg::EventKind::child_completed: {
      StepRecord& r = at();
      r.done = true;
      r.outside_outcome_seq = e.seq;
      r.value = e.data.at("result");
      break;
    }
    case pg::EventKind::child_failed: {
      StepRecord& r = at();
      r.done = r.failed = true;
      r.outside_outcome_seq = e.seq;
      r.status = e.data.value("status", "failed");
      r.error_type = e.data.value("error_type", "");
      r.error_message = e.data.value("error_message", "");
      break;
    }
    case pg::EventKind::cancel_requested: cancel_reason = e.data.value("reason", ""); break;
    case pg::EventKind::cancel_delivered:
      cancel_delivered = CancelDelivery{e.data.at("at_step").get<int>(), e.data.at("awaited").get<int>()};
      for (const auto& step : e.data.value("dropped", Json::array())) drop(steps.at(step.get<std::size_t>()));
      break;
    case pg::EventKind::workflow_completed:
    case pg::EventKind::workflow_failed:
    case pg::EventKind::workflow_cancelled:
    case pg::EventKind::workflow_continued: break;
    case pg::EventKind::workflow_resumed:
      // The failures of these steps no longer count: they run again (Runs::resume).
      for (const auto& step : e.data.value("retry_steps", Json::array())) {
        StepRecord& r = steps.at(step.get<std::size_t>());
        if (r.refused) {
          // A refused call that ended the run: voided, the code makes the call again as new.
          if (step.get<std::size_t>() + 1 != steps.size()) {
            throw Error(fmt::format("journal event {} (workflow_resumed) voids refused step {}, which is not the last",
                                    e.seq, step.get<int>()));
          }
          steps.pop_back();
          continue;
        }
        StepRecord fresh;
        fresh.kind = r.kind;
        fresh.name = r.name;
        r = std::move(fresh);
      }
      break;
  }
  // workflow_completed / _failed / _cancelled / _continued end the run: nothing to replay.
}

}  // namespace durable::detail
