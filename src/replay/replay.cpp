#include "replay/replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/checks.hpp"
#include "pg/records.hpp"
#include "base/uuid.hpp"

namespace durable::detail {

Replay::Replay(std::string workflow_id, std::string workflow_name, const JournalCache& journal, std::int64_t now_us,
               const Registry& registry, const Inbox& inbox)
    : workflow_id_(std::move(workflow_id)),
      workflow_name_(std::move(workflow_name)),
      journal_(journal),
      now_us_(now_us),
      registry_(registry),
      inbox_(inbox) {}

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

const pg::InboxMessage* Replay::next_message(const std::string& topic) {
  auto it = inbox_.topics.find(topic);
  const std::size_t taken = taken_[topic];
  if (it == inbox_.topics.end() || (taken == it->second.messages.size() && !it->second.complete)) {
    wanted_topics.insert(topic);
    suspend();
  }
  return taken == it->second.messages.size() ? nullptr : &it->second.messages[taken];
}

Json Replay::take_message(const std::string& topic, const pg::InboxMessage& m, int step) {
  ++taken_[topic];
  received.emplace_back(m.seq, step);
  add_event(pg::EventKind::message_received, step, topic,
            {{"message_id", m.message_id}, {"seq", m.seq}, {"payload", m.payload}});
  return m.payload;
}

std::optional<Json> Replay::receive(const std::string& topic, std::optional<Duration> timeout) {
  check_topic(topic);
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::receive, topic)) {
    if (!timeout && (r->empty || r->fire_at_us >= 0)) {
      // Journaled by code whose receive had a deadline: this code's cannot time out.
      nondeterminism_.emplace(fmt::format(
          "workflow '{}' ({}) is not deterministic: at sequence number {} the journal holds a receive('{}') with a "
          "deadline but the code asked for one without; version the change or start new runs under a new workflow "
          "name",
          workflow_id_, workflow_name_, step, topic));
      throw *nondeterminism_;
    }
    if (r->done) return r->empty ? std::nullopt : std::optional<Json>(r->value);
    // Waiting since an earlier replay: whichever came first by the database clock, a message or
    // the deadline (a message sent after it, while no engine ran, stays in the inbox).
    const pg::InboxMessage* m = next_message(topic);
    const bool deadline_first = r->fire_at_us >= 0 && (m ? m->sent_us > r->fire_at_us : r->fire_at_us <= now_us_);
    if (!m && !deadline_first) suspend();
    fired_now_.push_back(step);
    if (!deadline_first) return take_message(topic, *m, step);
    add_event(pg::EventKind::receive_timed_out, step, topic, Json::object());
    return std::nullopt;
  }
  const pg::InboxMessage* m = next_message(topic);
  StepRecord& r = add_step(StepKind::receive, topic);
  r.fire_at_us = -1;
  if (m) {
    r.done = true;
    r.value = m->payload;
    return take_message(topic, *m, step);
  }
  const auto wait_us = timeout ? std::chrono::duration_cast<std::chrono::microseconds>(*timeout).count() : -1;
  if (timeout && wait_us <= 0) {
    r.done = r.empty = true;
    add_event(pg::EventKind::receive_timed_out, step, topic, Json::object());
    return std::nullopt;
  }
  r.fire_at_us = timeout ? now_us_ + wait_us : -1;
  Json data = {{"fire_at_us", r.fire_at_us}};
  if (timeout) data["timeout_ms"] = timeout->count();
  add_event(pg::EventKind::receive_started, step, topic, std::move(data));
  suspend();
}

std::string Replay::send(const std::string& workflow_id, const std::string& topic, Json payload,
                         const SendOptions& options) {
  // Checked on every replay, before the step: the same code throws the same at the same place.
  check_workflow_id(workflow_id);
  check_topic(topic);
  check_message_key(options.idempotency_key);
  check_payload(payload, fmt::format("the payload of a message to '{}'", workflow_id));
  // A journaled step like an activity call, run by the engine's own send activity. Its key makes
  // a second attempt (after a crash) find the message the first one sent.
  const std::string key = options.idempotency_key.empty() ? fmt::format("durable:{}:{}", journal_.run_id, next_step_)
                                                          : options.idempotency_key;
  ActivityOptions send_options;
  send_options.retry = RetryPolicy{};
  send_options.retry->max_attempts = 20;
  send_options.retry->backoff = Backoff::exponential;
  send_options.retry->base = std::chrono::milliseconds{100};
  send_options.retry->max_backoff = std::chrono::seconds{10};
  const int step = schedule_activity(
      send_message_activity,
      {{"workflow_id", workflow_id}, {"topic", topic}, {"payload", std::move(payload)}, {"idempotency_key", key}},
      send_options);
  const Json answer = await_activity(step);
  if (answer.contains("message_id")) return answer.at("message_id").get<std::string>();
  if (answer.value("error", "") == "not_found") throw WorkflowNotFound(workflow_id);
  throw WorkflowEnded(workflow_id, answer.value("status", ""));
}

void Replay::set_event(const std::string& key, Json value) {
  check_event_key(key);
  check_payload(value, fmt::format("the value of event '{}'", key));
  const int step = next_step_++;
  if (replayed(step, StepKind::publish, key)) return;  // published when it was first journaled
  add_step(StepKind::publish, key).done = true;
  add_event(pg::EventKind::event_set, step, key, {{"value", value}});
  published[key] = {std::move(value), step};
}

std::int64_t Replay::wake_at_us() const {
  std::int64_t earliest = -1;
  auto consider = [&](const StepRecord& r) {
    const bool timed = r.kind == StepKind::timer || (r.kind == StepKind::receive && r.fire_at_us >= 0);
    if (timed && !r.done && (earliest < 0 || r.fire_at_us < earliest)) earliest = r.fire_at_us;
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
