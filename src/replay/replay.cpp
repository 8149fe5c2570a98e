#include "replay/replay.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <type_traits>

#include "base/checks.hpp"
#include "base/exceptions.hpp"
#include "base/uuid.hpp"
#include "durable/start_options.hpp"
#include "pg/records.hpp"

namespace durable::detail {

Replay::Replay(std::string workflow_id, std::string workflow_name, const JournalCache& journal, std::int64_t now_us,
               const Registry& registry, const Inbox& inbox, const ChildIds& ids)
    : workflow_id_(std::move(workflow_id)),
      workflow_name_(std::move(workflow_name)),
      journal_(journal),
      now_us_(now_us),
      registry_(registry),
      inbox_(inbox),
      ids_(ids),
      past_replayed_(journal.replayed_seq == 0) {}

void Replay::suspend(std::vector<int> awaited) {
  if (!suspended_) awaited_ = std::move(awaited);  // the code's first stop is where it waits
  suspended_ = true;
  throw Suspend{};
}

bool Replay::new_ground() const { return next_step_ >= static_cast<int>(journal_.steps.size() + new_steps_.size()); }

void Replay::cancel_point(int awaited, bool blocks) {
  if (cancel_thrown_ || suspended_) return;
  const std::string reason = journal_.cancel_reason.value_or("");
  if (const auto& delivered = journal_.cancel_delivered) {
    if (delivered->at_step == next_step_ && delivered->awaited == awaited) {
      cancel_thrown_ = true;
      throw WorkflowCancelled(workflow_id_, reason);
    }
    return;
  }
  if (!journal_.cancel_reason || !blocks) return;
  // Delivered here. The activities the code has not seen finish are dropped: their tasks go with
  // this commit (those not committed yet are never written), and awaiting them throws.
  Json dropped_steps = Json::array();
  const auto steps = static_cast<int>(journal_.steps.size() + new_steps_.size());
  for (int step = 0; step < steps; ++step) {
    const StepRecord& r = record(step);
    if (r.kind != StepKind::activity || r.done) continue;
    const auto journaled = static_cast<int>(journal_.steps.size());
    drop(step < journaled ? settled_.emplace(step, r).first->second
                          : new_steps_[static_cast<std::size_t>(step - journaled)]);
    dropped.push_back(step);
    dropped_steps.push_back(step);
  }
  std::erase_if(tasks, [&](const pg::NewTask& t) { return record(t.step).dropped; });
  add_event(-1, "", journal::CancelDelivered{next_step_, awaited, std::move(dropped_steps)});
  cancel_thrown_ = true;
  throw WorkflowCancelled(workflow_id_, reason);
}

const StepRecord* Replay::existing(int step) const {
  const auto& steps = journal_.steps;
  if (step < static_cast<int>(steps.size())) return &steps[static_cast<std::size_t>(step)];
  if (step - static_cast<int>(steps.size()) < static_cast<int>(new_steps_.size())) {
    return &new_steps_[static_cast<std::size_t>(step) - steps.size()];
  }
  return nullptr;
}

void Replay::diverge(int step, const std::string& journaled, const std::string& asked) {
  nondeterminism_.emplace(nondeterminism_message(workflow_id_.str(), workflow_name_, step, journaled, asked), step,
                          journaled, asked);
  throw *nondeterminism_;
}

void Replay::check_end(const char* how) {
  const auto journaled = static_cast<int>(journal_.steps.size());
  if (nondeterminism_ || suspended_ || next_step_ >= journaled) return;
  // The code ended the run before the calls it made when it ran before: it changed.
  const StepRecord& r = journal_.steps[static_cast<std::size_t>(next_step_)];
  const std::string held = describe(r.kind, r.name);
  nondeterminism_.emplace(nondeterminism_message(workflow_id_.str(), workflow_name_, next_step_, held, how), next_step_,
                          held, how);
}

const StepRecord* Replay::replayed(int step, StepKind kind, const std::string& name) {
  if (suspended_) suspend();            // code that swallowed a Suspend must not make progress
  if (next_run) throw ContinueAsNew{};  // nor code that swallowed a ContinueAsNew
  const StepRecord* record = existing(step);
  if (record && (record->kind != kind || record->name != name)) {
    diverge(step, describe(record->kind, record->name), describe(kind, name));
  }
  return record;
}

StepRecord& Replay::add_step(StepKind kind, const std::string& name) {
  StepRecord& r = new_steps_.emplace_back();
  r.kind = kind;
  r.name = name;
  return r;
}

void Replay::add_event(int step, const std::string& name, const journal::EventData& data) {
  events.push_back({journal::kind_of(data), step, name, journal::encode(data)});
  past_replayed_ = true;  // the last committed replay would have journaled it had it got here
}

template <class Checks>
auto Replay::checked_call(int step, const StepRecord* journaled, StepKind kind, const std::string& name,
                          const std::string& child_id, Checks&& checks) {
  std::optional<std::invoke_result_t<Checks&>> accepted;
  try {
    accepted.emplace(checks());
  } catch (const std::exception&) {  // a check's error, or one of the user's key function
    if (!journaled) refuse(step, kind, name, child_id);
    throw;
  }
  if (journaled) {
    diverge(step,
            fmt::format("{}, refused when the run first called it ({})", describe(kind, name), journaled->error_type),
            fmt::format("{}, which this code accepts", describe(kind, name)));
  }
  return std::move(*accepted);
}

void Replay::refuse(int step, StepKind kind, const std::string& name, const std::string& child_id) {
  const ErrorInfo error = current_error();
  StepRecord& r = add_step(kind, name);
  r.refused = r.done = r.failed = true;
  r.child_id = child_id;
  r.error_type = error.type;
  r.error_message = error.message;
  add_event(step, name,
            journal::CallRefused{kind == StepKind::child ? "child" : "activity", error.type, error.message,
                                 kind == StepKind::child ? std::optional<std::string>(child_id) : std::nullopt});
}

int Replay::schedule_activity(const std::string& name, Json input, const ActivityOptions& options) {
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  const StepRecord* journaled = replayed(step, StepKind::activity, name);
  if (journaled && !journaled->refused) return step;
  // Everything is checked before the command exists, so bad input writes no task.
  ResolvedActivityOptions resolved = checked_call(step, journaled, StepKind::activity, name, "", [&] {
    const ActivityDefinition& def = registry_.activity(name);
    check_payload(input, fmt::format("the input of activity '{}'", name));  // before converting it
    def.check_input(input);
    ResolvedActivityOptions checked = resolve(options, def.options);
    if (!checked.idempotency_key && def.key_of) checked.idempotency_key = def.key_of(input);
    validate(checked, name);
    return checked;
  });
  add_step(StepKind::activity, name);
  // The event keeps what was scheduled: the task row goes once the activity completes. Options
  // all at their defaults are left out.
  journal::ActivityScheduled scheduled{input, std::nullopt};
  if (Json stored = pg::options_to_json(resolved); !stored.empty()) scheduled.options = std::move(stored);
  add_event(step, name, scheduled);
  tasks.push_back({step, name, std::move(input), std::move(resolved)});
  return step;
}

const StepRecord& Replay::record(int step) const {
  if (auto it = settled_.find(step); it != settled_.end()) return it->second;
  const auto journaled = journal_.steps.size();
  const auto index = static_cast<std::size_t>(step);
  return index < journaled ? journal_.steps[index] : new_steps_.at(index - journaled);
}

bool Replay::settle(int step) {
  const StepRecord& r = record(step);
  if (r.done) return true;
  if (r.kind != StepKind::timer && r.kind != StepKind::receive) return false;
  const pg::InboxMessage* m = nullptr;
  bool timed_out = r.fire_at_us >= 0 && r.fire_at_us <= now_us_;
  if (r.kind == StepKind::receive) {
    // Whichever came first by the database clock, a message or the deadline (a message sent after
    // it, while no engine ran, stays in the inbox).
    m = next_message(r.name);
    if (m) timed_out = r.fire_at_us >= 0 && m->sent_us > r.fire_at_us;
  }
  if (!m && !timed_out) return false;
  const auto journaled = static_cast<int>(journal_.steps.size());
  StepRecord& s = step < journaled ? settled_.emplace(step, r).first->second
                                   : new_steps_[static_cast<std::size_t>(step - journaled)];
  s.done = true;
  if (r.kind == StepKind::timer) {
    add_event(step, "", journal::TimerFired{});
  } else if (timed_out) {
    s.empty = true;
    add_event(step, s.name, journal::ReceiveTimedOut{});
  } else {
    s.value = take_message(s.name, *m, step);
  }
  return true;
}

const StepRecord& Replay::wait_for(int step) {
  if (suspended_) suspend();
  if (next_run) throw ContinueAsNew{};
  cancel_point(step, false);
  if (!settle(step)) {
    cancel_point(step, true);
    suspend({step});
  }
  const StepRecord& r = record(step);
  // An outcome journaled from outside since the last committed replay read the journal: that
  // replay stopped here. (One this replay journaled itself was marked when it was.)
  if (r.outside_outcome_seq >= 0 && r.outside_outcome_seq >= journal_.replayed_seq) past_replayed_ = true;
  return r;
}

Json Replay::await_activity(int step) {
  const StepRecord& r = wait_for(step);
  if (r.failed) throw ActivityFailed(r.name, r.error_type, r.error_message, r.attempts);
  return r.value;
}

int Replay::start_timer(Duration duration) {
  // Checked before a step is taken: the same code refuses it again at every replay, at this point.
  check_timer_duration(duration, "a durable timer (sleep, start_timer)");
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (replayed(step, StepKind::timer, "")) return step;
  StepRecord& r = add_step(StepKind::timer, "");
  r.fire_at_us = now_us_ + std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
  add_event(step, "", journal::TimerStarted{r.fire_at_us, duration.count()});
  return step;
}

void Replay::await_timer(int step) { wait_for(step); }

void Replay::sleep(Duration duration) { await_timer(start_timer(duration)); }

std::int64_t Replay::now_us() {
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::side_effect, "now")) return r->value.get<std::int64_t>();
  StepRecord& r = add_step(StepKind::side_effect, "now");
  r.done = true;
  r.value = now_us_;
  add_event(step, "now", journal::SideEffect{now_us_});
  return now_us_;
}

std::string Replay::uuid() {
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  if (const StepRecord* r = replayed(step, StepKind::side_effect, "uuid")) return r->value.get<std::string>();
  StepRecord& r = add_step(StepKind::side_effect, "uuid");
  r.done = true;
  r.value = random_uuid();
  add_event(step, "uuid", journal::SideEffect{r.value});
  return r.value.get<std::string>();
}

namespace {

std::vector<std::string> replaceable_statuses(IdReusePolicy policy) {
  switch (policy) {
    case IdReusePolicy::reject_duplicate: return {};
    case IdReusePolicy::allow_if_failed: return {"failed", "cancelled"};
    case IdReusePolicy::allow_if_ended: return {"completed", "failed", "cancelled"};
  }
  return {};
}

}  // namespace

int Replay::start_child(const std::string& name, const std::string& child_id, Json input, const ChildOptions& options) {
  check_workflow_id(child_id);
  check_payload(input, fmt::format("the input of child workflow '{}'", child_id));
  cancel_point(-1, new_ground());
  const int step = next_step_++;
  const StepRecord* journaled = replayed(step, StepKind::child, name);
  if (journaled) {
    if (journaled->child_id != child_id) {
      diverge(step, fmt::format("a child '{}' under id '{}'", name, journaled->child_id),
              fmt::format("one under id '{}'", child_id));
    }
    if (journaled->status == "taken") {
      throw WorkflowAlreadyStarted(child_id, RunId{journaled->value.value("run_id", "")},
                                   journaled->value.value("status", ""));
    }
    if (!journaled->refused) return step;
  }
  // Checked before the start exists, so bad input starts nothing.
  checked_call(step, journaled, StepKind::child, name, child_id, [&] {
    if (journal_.depth >= max_child_depth) {
      throw ChildDepthExceeded(fmt::format(
          "workflow '{}' ({}) cannot start child '{}': it is nested {} deep already, the most durable allows "
          "(max_child_depth); look for a workflow that starts itself without end",
          workflow_id_, workflow_name_, child_id, journal_.depth));
    }
    registry_.workflow(name).check_input(input);
    return true;
  });
  StepRecord& r = add_step(StepKind::child, name);
  r.child_id = child_id;
  std::vector<std::string> replaceable = replaceable_statuses(options.id_reuse);
  std::optional<pg::TakenId> holder;
  for (const pg::NewChild& c : children) {
    if (c.workflow_id == child_id) holder = pg::TakenId{c.run_id, journal::RunStatus::running};  // started just now
  }
  if (!holder) {
    const auto read = ids_.latest.find(child_id);
    if (read == ids_.latest.end()) {
      // Not read yet: go on as if it were free, to learn every id this replay starts children under.
      wanted_ids.insert(child_id);
      return step;
    }
    holder = read->second;
  }
  const bool free = !holder || std::find(replaceable.begin(), replaceable.end(), journal::to_text(holder->status)) !=
                                   replaceable.end();
  if (!free) {
    const std::string status(journal::to_text(holder->status));
    r.done = r.failed = true;
    r.status = "taken";
    const journal::ChildStartFailed taken{child_id, holder->run_id, status};
    r.value = journal::encode(taken);
    add_event(step, name, taken);
    throw WorkflowAlreadyStarted(child_id, RunId{holder->run_id}, status);
  }
  const std::string parent_close = options.parent_close == ParentClosePolicy::abandon ? "abandon" : "cancel";
  pg::NewChild child{step,  child_id,     time_ordered_uuid(), name,
                     input, parent_close, journal_.depth + 1,  std::move(replaceable)};
  add_event(step, name, journal::ChildStarted{child_id, child.run_id, parent_close, input});
  children.push_back(std::move(child));
  return step;
}

Json Replay::await_child(int step) {
  const StepRecord& r = wait_for(step);
  if (r.failed) throw ChildWorkflowFailed(r.child_id, r.name, r.status, r.error_type, r.error_message);
  return r.value;
}

void Replay::continue_as_new(Json input) {
  if (suspended_) suspend();
  if (next_run) throw ContinueAsNew{};
  check_payload(input, fmt::format("the input of the run after '{}' (continue_as_new)", workflow_id_));
  registry_.workflow(workflow_name_).check_input(input);
  cancel_point(-1, true);
  next_run.emplace(time_ordered_uuid(), std::move(input));
  throw ContinueAsNew{};
}

bool Replay::patched(const std::string& change_id) {
  check_patch_id(change_id);
  if (suspended_) suspend();
  if (next_run) throw ContinueAsNew{};
  if (auto it = patches_.find(change_id); it != patches_.end()) return it->second;
  // Not a cancel point: it waits for nothing and runs nothing.
  const int step = next_step_;
  bool taken = true;
  if (const StepRecord* r = existing(step)) {
    taken = r->kind == StepKind::patch && r->name == change_id;  // else journaled past here by code without it
    if (taken) ++next_step_;
  } else if (journal_.cancel_delivered && journal_.cancel_delivered->at_step >= step) {
    // The code without it was told of a cancel here or later: it went past this point too, and a
    // marker would move the place the cancel is thrown at again.
    taken = false;
  } else {
    ++next_step_;
    add_step(StepKind::patch, change_id).done = true;
    add_event(step, change_id, journal::Patched{});
  }
  patches_.emplace(change_id, taken);
  return taken;
}

void Replay::deprecate_patch(const std::string& change_id) {
  check_patch_id(change_id);
  if (suspended_) suspend();
  if (next_run) throw ContinueAsNew{};
  if (!patches_.emplace(change_id, true).second) return;
  const StepRecord* r = existing(next_step_);
  if (r && r->kind == StepKind::patch && r->name == change_id) ++next_step_;  // journaled by the patched code
}

bool Replay::is_replaying() const { return !past_replayed_; }

// Keeps what workflow code logs while it is not replaying, as the replay's log lines; drops what it
// logs re-running what an earlier replay ran. The replay detaches it when it ends.
class ReplayLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ReplayLogSink(Replay* replay) : replay_(replay) {}
  void detach() {
    std::lock_guard lock(mutex_);
    replay_ = nullptr;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (!replay_ || replay_->is_replaying()) return;
    replay_->log_lines.emplace_back(msg);
  }
  void flush_() override {}

 private:
  Replay* replay_;
};

spdlog::logger& Replay::logger() {
  if (!logger_) {
    log_sink_ = std::make_shared<ReplayLogSink>(this);
    logger_ = std::make_shared<spdlog::logger>(workflow_id_.str(), log_sink_);
    logger_->set_level(spdlog::default_logger_raw()->level());  // what it would drop is not even formatted
  }
  return *logger_;
}

Replay::~Replay() {
  if (log_sink_) log_sink_->detach();
}

std::int64_t Replay::wake_at_us() const {
  // Only what the code waits on wakes it: whatever that is wakes the run, and a timer it did not
  // wait on (due or not) is found due when the code gets to it.
  std::vector<int> steps = awaited_;
  if (steps.empty()) {  // not known: every step
    steps.resize(journal_.steps.size() + new_steps_.size());
    std::iota(steps.begin(), steps.end(), 0);
  }
  std::int64_t earliest = -1;
  for (int step : steps) {
    const StepRecord& r = record(step);
    const bool timed = r.kind == StepKind::timer || (r.kind == StepKind::receive && r.fire_at_us >= 0);
    if (timed && !r.done && r.fire_at_us > now_us_ && (earliest < 0 || r.fire_at_us < earliest)) {
      earliest = r.fire_at_us;
    }
  }
  return earliest;
}

}  // namespace durable::detail
