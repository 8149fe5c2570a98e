#include "replay/replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "pg/records.hpp"
#include "base/uuid.hpp"

namespace durable::detail {

Replay::Replay(std::string workflow_id, std::string workflow_name, const JournalCache& journal, std::int64_t now_us,
               const Registry& registry)
    : workflow_id_(std::move(workflow_id)),
      workflow_name_(std::move(workflow_name)),
      journal_(journal),
      now_us_(now_us),
      registry_(registry) {}

void Replay::suspend() {
  suspended_ = true;
  throw Suspend{};
}

const StepRecord* Replay::replayed(int step, StepKind kind, const std::string& name) {
  if (suspended_) suspend();  // code that swallowed a Suspend must not make progress
  const auto& steps = journal_.steps;
  const StepRecord* record = nullptr;
  if (step < static_cast<int>(steps.size())) {
    record = &steps[static_cast<std::size_t>(step)];
  } else if (step - static_cast<int>(steps.size()) < static_cast<int>(new_steps_.size())) {
    record = &new_steps_[static_cast<std::size_t>(step) - steps.size()];
  }
  if (record && (record->kind != kind || record->name != name)) {
    nondeterminism_.emplace(
        fmt::format("workflow '{}' ({}) is not deterministic: at sequence number {} the journal holds {} but the code "
                    "asked for {}. Workflow code must make the same calls in the same order on every replay; "
                    "version the change or start new runs under a new workflow name",
                    workflow_id_, workflow_name_, step, describe(record->kind, record->name), describe(kind, name)));
    throw *nondeterminism_;
  }
  return record;
}

StepRecord& Replay::add_step(StepKind kind, const std::string& name) {
  StepRecord& r = new_steps_.emplace_back();
  r.kind = kind;
  r.name = name;
  return r;
}

void Replay::add_event(pg::EventKind kind, int step, const std::string& name, Json data) {
  events.push_back({kind, step, name, std::move(data)});
}

int Replay::schedule_activity(const std::string& name, Json input, const ActivityOptions& options) {
  const int step = next_step_++;
  if (replayed(step, StepKind::activity, name)) return step;
  // New ground: everything is checked before the command exists, so bad input writes no task.
  const ActivityDefinition& def = registry_.activity(name);
  check_payload(input, fmt::format("the input of activity '{}'", name));  // before converting it
  def.check_input(input);
  ResolvedActivityOptions resolved = resolve(options, def.options);
  if (!resolved.idempotency_key && def.key_of) resolved.idempotency_key = def.key_of(input);
  validate(resolved, name);
  add_step(StepKind::activity, name);
  // The event keeps what was scheduled: the task row goes once the activity completes. Options
  // all at their defaults are left out.
  Json scheduled = {{"input", input}};
  if (Json stored = pg::options_to_json(resolved); !stored.empty()) scheduled["options"] = std::move(stored);
  add_event(pg::EventKind::activity_scheduled, step, name, std::move(scheduled));
  tasks.push_back({step, name, std::move(input), std::move(resolved)});
  return step;
}

Json Replay::await_activity(int step) {
  if (suspended_) suspend();
  const auto journaled = static_cast<int>(journal_.steps.size());
  if (step >= journaled) suspend();  // scheduled in this replay: no outcome yet
  const StepRecord& r = journal_.steps[static_cast<std::size_t>(step)];
  if (!r.done) suspend();
  if (r.failed) throw ActivityFailed(r.name, r.error_type, r.error_message, r.attempts);
  return r.value;
}

void Replay::sleep(Duration duration) {
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::timer, "")) {
    if (r->done) return;
    if (r->fire_at_us > now_us_) suspend();
    // Due by the database clock at the claim: journal that it fired, and go on.
    fired_now_.push_back(step);
    add_event(pg::EventKind::timer_fired, step, "", Json::object());
    return;
  }
  StepRecord& r = add_step(StepKind::timer, "");
  r.fire_at_us = now_us_ + std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
  add_event(pg::EventKind::timer_started, step, "", {{"fire_at_us", r.fire_at_us}, {"duration_ms", duration.count()}});
  if (r.fire_at_us > now_us_) suspend();
  r.done = true;
  add_event(pg::EventKind::timer_fired, step, "", Json::object());
}

std::int64_t Replay::now_us() {
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::side_effect, "now")) return r->value.get<std::int64_t>();
  StepRecord& r = add_step(StepKind::side_effect, "now");
  r.done = true;
  r.value = now_us_;
  add_event(pg::EventKind::side_effect, step, "now", {{"value", now_us_}});
  return now_us_;
}

std::string Replay::uuid() {
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::side_effect, "uuid")) return r->value.get<std::string>();
  StepRecord& r = add_step(StepKind::side_effect, "uuid");
  r.done = true;
  r.value = random_uuid();
  add_event(pg::EventKind::side_effect, step, "uuid", {{"value", r.value}});
  return r.value.get<std::string>();
}

std::int64_t Replay::wake_at_us() const {
  std::int64_t earliest = -1;
  auto consider = [&](const StepRecord& r) {
    if (r.kind == StepKind::timer && !r.done && (earliest < 0 || r.fire_at_us < earliest)) earliest = r.fire_at_us;
  };
  for (std::size_t i = 0; i < journal_.steps.size(); ++i) {
    if (std::find(fired_now_.begin(), fired_now_.end(), static_cast<int>(i)) == fired_now_.end()) {
      consider(journal_.steps[i]);
    }
  }
  for (const auto& r : new_steps_) consider(r);
  return earliest;
}

}  // namespace durable::detail
