// A workflow's messages and events under replay: receive (with and without a deadline), wait_any
// over receives and timers, send (a journaled activity) and set_event.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/checks.hpp"
#include "base/exceptions.hpp"
#include "pg/records.hpp"
#include "replay/replay.hpp"

namespace durable::detail {

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
  add_event(step, topic, journal::MessageReceived{m.message_id, m.seq, m.payload});
  return m.payload;
}

std::optional<Json> Replay::receive(const std::string& topic, std::optional<Duration> timeout) {
  check_topic(topic);
  if (timeout) check_timer_duration(*timeout, "receive's timeout");
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::receive, topic)) {
    if (!timeout && (r->empty || r->fire_at_us >= 0)) {
      // Journaled by code whose receive had a deadline: this code's cannot time out.
      diverge(step, fmt::format("a receive('{}') with a deadline", topic),
              fmt::format("receive('{}') without one", topic));
    }
    const StepRecord& settled = wait_for(step);  // still waiting since an earlier replay, perhaps
    return settled.empty ? std::nullopt : std::optional<Json>(settled.value);
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
    add_event(step, topic, journal::ReceiveTimedOut{});
    return std::nullopt;
  }
  r.fire_at_us = timeout ? now_us_ + wait_us : -1;
  add_event(
      step, topic,
      journal::ReceiveStarted{r.fire_at_us, timeout ? std::optional<std::int64_t>(timeout->count()) : std::nullopt});
  suspend({step});
}

int Replay::start_receive(const std::string& topic) {
  check_topic(topic);
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (replayed(step, StepKind::receive, topic)) return step;
  // Waiting starts here; the inbox is read only when the code awaits it.
  add_step(StepKind::receive, topic).fire_at_us = -1;
  add_event(step, topic, journal::ReceiveStarted{-1, std::nullopt});
  return step;
}

Json Replay::await_receive(int step) {
  if (suspended_) suspend();
  want_inboxes({step});
  return wait_for(step).value;
}

void Replay::want_inboxes(const std::vector<int>& steps) {
  for (int step : steps) {
    const StepRecord& r = record(step);
    if (r.kind != StepKind::receive || r.done) continue;
    const auto it = inbox_.topics.find(r.name);
    const bool read = it != inbox_.topics.end() && (it->second.complete || taken_[r.name] < it->second.messages.size());
    if (!read) wanted_topics.insert(r.name);
  }
  if (!wanted_topics.empty()) suspend();
}

std::size_t Replay::wait_any(const std::vector<int>& steps) {
  if (steps.empty()) {
    throw InvalidArgument(
        fmt::format("workflow '{}' called wait_any with no futures: pass at least one", workflow_id_));
  }
  const std::string name = fmt::format("{}", fmt::join(steps, ","));
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::wait, name)) {
    const bool index_like = r->value.is_number_integer() && r->value.get<std::int64_t>() >= 0;
    const auto index = index_like ? r->value.get<std::size_t>() : steps.size();
    if (index >= steps.size()) {  // a journal of other code (or a tampered one): never an index past the futures
      diverge(step, fmt::format("a wait_any that chose future {}", r->value.dump()),
              fmt::format("a wait_any of {} futures", steps.size()));
    }
    return index;
  }
  // First time here. Outcomes already journaled came before this replay; then what is due now,
  // by its time on the database clock (a timer's fire time, a message's send time), so a message
  // sent after a deadline loses to it even when no engine ran in between. Ties: the order given.
  want_inboxes(steps);
  std::optional<std::size_t> chosen;
  std::int64_t chosen_at = 0;
  for (std::size_t i = 0; i < steps.size() && !(chosen && chosen_at < 0); ++i) {
    const StepRecord& r = record(steps[i]);
    std::int64_t at = -1;  // journaled
    if (!r.done) {
      const pg::InboxMessage* m = r.kind == StepKind::receive ? next_message(r.name) : nullptr;
      if (m) {
        at = m->sent_us;
      } else if (r.kind == StepKind::timer && r.fire_at_us <= now_us_) {
        at = r.fire_at_us;
      } else {
        continue;  // not ready
      }
    }
    if (!chosen || at < chosen_at) {
      chosen = i;
      chosen_at = at;
    }
  }
  if (chosen) {
    settle(steps[*chosen]);
    StepRecord& r = add_step(StepKind::wait, name);
    r.done = true;
    r.value = *chosen;
    add_event(step, name, journal::WaitChosen{static_cast<int>(*chosen)});
    return *chosen;
  }
  suspend(steps);
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
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (replayed(step, StepKind::publish, key)) return;  // published when it was first journaled
  add_step(StepKind::publish, key).done = true;
  add_event(step, key, journal::EventSet{value});
  published[key] = {std::move(value), step};
}

}  // namespace durable::detail
