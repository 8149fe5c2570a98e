// One replay of workflow code against its journal: answers the code's calls from the
// journal, checks they match it, and collects the new commands to commit.
#pragma once

#include <spdlog/details/log_msg_buffer.h>
#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "base/registry.hpp"
#include "durable/ids.hpp"
#include "durable/workflow.hpp"
#include "journal/events.hpp"
#include "pg/records.hpp"
#include "replay/child_ids.hpp"
#include "replay/inbox.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

// Unwinds workflow code when it waits on something not journaled yet. Deliberately not a
// std::exception, so `catch (const std::exception&)` in workflow code lets it pass.
struct Suspend {};
// Unwinds workflow code that called continue_as_new, the same way: the run ends there.
struct ContinueAsNew {};

class ReplayLogSink;

class Replay {
 public:
  // The context the workflow code runs with, journaled in this replay.
  WorkflowContext context() { return WorkflowContext(*this); }
  Replay(std::string workflow_id, std::string workflow_name, const JournalCache& journal, std::int64_t now_us,
         const Registry& registry, const Inbox& inbox = Inbox::unread(), const ChildIds& ids = ChildIds::unread());
  ~Replay();  // a logger the code kept drops what it logs from then on
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  const WorkflowId& workflow_id() const { return workflow_id_; }
  const Json& schedule_context() const { return journal_.schedule; }

  int schedule_activity(const std::string& name, Json input, const ActivityOptions& options);
  Json await_activity(int step);
  int start_timer(Duration duration);
  void await_timer(int step);
  void sleep(Duration duration);
  std::int64_t now_us();
  std::string uuid();
  std::optional<Json> receive(const std::string& topic, std::optional<Duration> timeout);
  int start_receive(const std::string& topic);
  Json await_receive(int step);
  // The index in `steps` of the first whose outcome is there, journaled so replays choose the same.
  std::size_t wait_any(const std::vector<int>& steps);
  std::string send(const std::string& workflow_id, const std::string& topic, Json payload, const SendOptions& options);
  void set_event(const std::string& key, Json value);
  // Starts child workflow `name` under `child_id`, or journals that the id is taken and throws
  // WorkflowAlreadyStarted (again on every replay).
  int start_child(const std::string& name, const std::string& child_id, Json input, const ChildOptions& options);
  // The child's result; throws ChildWorkflowFailed when it failed or was cancelled.
  Json await_child(int step);
  // Ends the run as continued, the next run to start with `input` (checked first: bad input
  // throws into the code, and nothing happens). Throws ContinueAsNew, or WorkflowCancelled when a
  // cancel is asked for and not seen yet.
  [[noreturn]] void continue_as_new(Json input);
  // After the code ended the run (`how`: "the run's end", "continue_as_new"): a non-determinism
  // error when it had opened fewer steps than the journal holds.
  void check_end(const char* how);
  // Whether the code takes change `change_id`'s new path here: yes when the journal has its
  // marker at this step, or the code is on new ground (the marker is journaled then); no when
  // the journal went past this step without it. The first answer holds for the whole replay.
  bool patched(const std::string& change_id);
  // The new path always: a marker at this step is passed over, none is written.
  void deprecate_patch(const std::string& change_id);
  // The code is re-running what the last committed replay ran: what it does now was done before.
  bool is_replaying() const;
  // A logger that keeps what the code logs while not replaying (in log_lines) and drops the rest.
  spdlog::logger& logger();

  // After the workflow function returned or threw: what to commit.
  std::vector<pg::NewEvent> events;           // new journal events, in step order
  std::vector<pg::NewTask> tasks;             // new activity tasks
  std::vector<std::pair<int, int>> received;  // inbox messages taken: [seq, step]
  // Topics whose inbox the code reached a receive of before they were read (or read to the end):
  // read them and replay again. Nothing of this replay may be committed while any remain.
  std::set<std::string> wanted_topics;
  std::map<std::string, std::pair<Json, int>> published;  // events set: key -> (latest value, its step)
  std::vector<pg::NewChild> children;                     // children started
  // Child ids the code started children under before they were read: read them and replay again.
  // This replay went on as if they were free; nothing of it may be committed while any remain.
  std::set<std::string> wanted_ids;
  std::vector<int> dropped;  // activity steps the cancel this replay delivered dropped
  // The code called continue_as_new: the next run's id and input. Whatever the code did after
  // (it cannot make a durable call), the run continues as new.
  std::optional<std::pair<std::string, Json>> next_run;
  // What the code logged while not replaying, to be written once this replay's commit went in.
  std::vector<spdlog::details::log_msg_buffer> log_lines;
  bool suspended() const { return suspended_; }
  // WorkflowCancelled was thrown into the code (delivered now or replayed), so one escaping the
  // code ends the run as cancelled.
  bool cancel_thrown() const { return cancel_thrown_; }
  // A non-determinism error is kept here too, so workflow code that swallows it cannot hide it.
  const std::optional<NonDeterminismError>& nondeterminism() const { return nondeterminism_; }
  // The earliest unfired timer or receive deadline among the steps the code waits on, -1 if none:
  // a timer it does not wait on (left behind, or lost a wait_any) wakes nothing; it is found due
  // when the code gets to it.
  std::int64_t wake_at_us() const;

 private:
  // The step at `step` as the journal or this replay has it; nullptr on new ground.
  const StepRecord* existing(int step) const;
  // Keeps the non-determinism error (so code that swallows it cannot hide it) and throws it.
  [[noreturn]] void diverge(int step, const std::string& journaled, const std::string& asked);
  // The journaled step at `step` if the journal has it (checked against what the code asks);
  // nullptr when the code reached new ground.
  const StepRecord* replayed(int step, StepKind kind, const std::string& name);
  // A step as this replay sees it: journaled, added by it, or settled by it.
  const StepRecord& record(int step) const;
  // Whether the step's outcome is there. A timer past its time, or a receive with a message or
  // past its deadline, is settled now: journaled by this replay. Activities finish elsewhere.
  bool settle(int step);
  // The step once its outcome is there (settling it if it can); suspends while it is not, and
  // throws WorkflowCancelled when a cancel is seen at this await.
  const StepRecord& wait_for(int step);
  // Suspends, wanting their topics, when receives among `steps` have an inbox not read yet.
  void want_inboxes(const std::vector<int>& steps);
  // Stops the code here; `awaited`: the steps it waits on, when it waits (not when it wants more read).
  [[noreturn]] void suspend(std::vector<int> awaited = {});
  // A place where a requested cancel is seen: a new call (`awaited` -1) or an await of step
  // `awaited`. Throws WorkflowCancelled where the journal says it was delivered; else, when a
  // cancel is requested and not yet delivered and `blocks` (the call is new ground, or the
  // await would wait), delivers it here: journaled, the unfinished activities dropped.
  void cancel_point(int awaited, bool blocks);
  bool new_ground() const;  // the next call opens a step the journal does not have
  StepRecord& add_step(StepKind kind, const std::string& name);
  // Runs the checks of the activity or child call at `step` and returns what they return. A call
  // refused on new ground still takes its step: its refusal is journaled (call_refused), so code
  // that catches the error and goes on keeps every later step where it was. At a journaled
  // refusal (`journaled`) the checks run again: this code refuses the call the same way, or it
  // has changed (non-determinism).
  template <class Checks>
  auto checked_call(int step, const StepRecord* journaled, StepKind kind, const std::string& name,
                    const std::string& child_id, Checks&& checks);
  // Journals the refusal in flight (call only inside a catch block).
  void refuse(int step, StepKind kind, const std::string& name, const std::string& child_id);
  void add_event(int step, const std::string& name, const journal::EventData& data);
  // The oldest message of `topic` this replay has not taken yet; nullptr when there is none.
  // Suspends (wanting the topic) when the inbox was not read that far.
  const pg::InboxMessage* next_message(const std::string& topic);
  // Takes that message at `step`: journaled as received, and marked so in the commit.
  Json take_message(const std::string& topic, const pg::InboxMessage& m, int step);

  WorkflowId workflow_id_;
  std::string workflow_name_;
  const JournalCache& journal_;
  std::int64_t now_us_;
  const Registry& registry_;
  const Inbox& inbox_;
  const ChildIds& ids_;
  std::map<std::string, std::size_t> taken_;  // per topic: messages of inbox_ taken
  int next_step_ = 0;
  std::vector<StepRecord> new_steps_;  // steps this replay added beyond the journal
  std::map<int, StepRecord> settled_;  // journaled steps whose outcome this replay journaled
  bool suspended_ = false;
  std::vector<int> awaited_;  // what the code waits on where it suspended; empty: unknown
  bool cancel_thrown_ = false;
  std::optional<NonDeterminismError> nondeterminism_;
  std::map<std::string, bool> patches_;  // change id -> the path patched() chose in this replay
  // The code got something no committed replay had given it (an outcome journaled since, or one
  // this replay journals), or no replay of the run was committed yet: from here on it runs code
  // no replay ran before. (The last committed replay went as far as its first await of something
  // it did not have, so everything before such an await was run by it.)
  bool past_replayed_;
  std::shared_ptr<ReplayLogSink> log_sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace durable::detail
