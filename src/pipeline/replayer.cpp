#include "pipeline/replayer.hpp"

#include <algorithm>
#include <iterator>

#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "base/uuid.hpp"

namespace durable::detail {

void Replayer::read_inbox(const JournalCache& journal, const std::set<std::string>& topics, Inbox& inbox) {
  constexpr int page = 1000;
  for (const std::string& topic : topics) {
    Inbox::Topic& t = inbox.topics[topic];
    const int after = t.messages.empty() ? 0 : t.messages.back().seq;
    auto [sent, messages] = store_.read_inbox(journal.run_id, topic, after, page);
    if (inbox.messages_sent < 0) inbox.messages_sent = sent;  // the earliest count: a send after it replays again
    t.complete = static_cast<int>(messages.size()) < page;
    std::move(messages.begin(), messages.end(), std::back_inserter(t.messages));
  }
}

Replayer::Planned Replayer::plan(const JournalCache& journal, const std::string& workflow_id, std::int64_t now_us,
                                 SlotHold* hold, bool may_read) {
  Inbox inbox;
  ChildIds ids;
  const OnNondeterminism policy = settings_.on_nondeterminism;
  Decisions decided = decide(registry_, journal, workflow_id, now_us, inbox, ids, policy);
  Planned planned;
  if (decided.blocked) {
    planned.needs_claim = !may_read;  // a block is written under a claim's lease
    planned.blocked = std::move(decided.blocked);
    return planned;
  }
  const auto delivers_cancel = [](const Decisions& d) {
    return std::any_of(d.events.begin(), d.events.end(),
                       [](const pg::NewEvent& e) { return e.kind == journal::EventKind::cancel_delivered; });
  };
  const bool continues = decided.status == journal::RunStatus::continued;  // commits in a transaction of two statements
  if (!may_read && (!decided.published.empty() || !decided.children.empty() || delivers_cancel(decided) || continues)) {
    planned.needs_claim = true;
    return planned;
  }
  while (!decided.complete()) {
    if (!may_read) {
      planned.needs_claim = true;
      return planned;
    }
    if (!decided.wanted_topics.empty()) {
      read_inbox(journal, decided.wanted_topics, inbox);
      failpoint("replay.after_inbox_read");  // a message sent from here on must still wake the run
    }
    if (!decided.wanted_ids.empty()) {
      auto taken = store_.read_child_ids(decided.wanted_ids);
      for (const std::string& id : decided.wanted_ids) {
        auto it = taken.find(id);
        ids.latest[id] = it == taken.end() ? std::nullopt : std::optional<pg::TakenId>(it->second);
      }
      failpoint("replay.after_child_ids_read");  // an id taken from here on must refuse the commit
    }
    decided = decide(registry_, journal, workflow_id, now_us, inbox, ids, policy);
    if (decided.blocked) {
      planned.blocked = std::move(decided.blocked);
      return planned;
    }
  }
  planned.commit.delivers_cancel = delivers_cancel(decided);
  fill(planned, std::move(decided), journal, workflow_id, inbox);
  if (slots_ && !stopping_.load() && !planned.commit.tasks.empty()) {
    planned.slots = lease_at_once(planned.commit, hold);
  }
  return planned;
}

void Replayer::fill(Planned& planned, Decisions decided, const JournalCache& journal, const std::string& workflow_id,
                    const Inbox& inbox) {
  planned.log_lines = std::move(decided.log_lines);
  planned.ended = decided.ended();
  pg::ReplayCommit& commit = planned.commit;
  commit.workflow_id = workflow_id;
  commit.run_id = journal.run_id;
  commit.seen_seq = journal.next_seq;
  commit.replayed_seq = journal.replayed_seq;
  // Unique per commit: marks the tasks it leases at once and a workflow continued in place, so a
  // retry after a lost answer can tell what went in.
  commit.claim_token = random_token();
  commit.events = std::move(decided.events);
  commit.tasks = std::move(decided.tasks);
  commit.status = decided.status;
  commit.result = std::move(decided.result);
  commit.error_type = std::move(decided.error_type);
  commit.error_message = std::move(decided.error_message);
  commit.wake_at_us = decided.wake_at_us;
  commit.seen_messages = inbox.messages_sent;
  commit.received = std::move(decided.received);
  commit.published = std::move(decided.published);
  commit.children = std::move(decided.children);
  commit.dropped = std::move(decided.dropped);
  commit.next_run_id = std::move(decided.next_run_id);
  commit.next_input = std::move(decided.next_input);
  if (commit.status == journal::RunStatus::failed) {
    logger().info("workflow '{}' failed: {}: {}", workflow_id, commit.error_type,
                  loggable(commit.error_message, settings_.encoded));
  } else if (commit.status == journal::RunStatus::cancelled) {
    logger().info("workflow '{}' ended cancelled: {}", workflow_id, loggable(commit.error_message, settings_.encoded));
  }
}

// Run at once: tasks of activities this engine runs take its free slots in the same commit,
// leased to it, instead of waiting for a claim. Durable all the same: they are rows like any other.
Reservation Replayer::lease_at_once(pg::ReplayCommit& commit, SlotHold* hold) {
  const auto runs_here = [&](const pg::NewTask& task) {
    return !task.dropped && settings_.serves_default_queue && task.options.queue == default_queue &&
           registry_.activities.count(task.name) > 0 && !paused_.activity_paused(task.name);
  };
  int local = 0;
  for (const pg::NewTask& task : commit.tasks) local += runs_here(task) ? 1 : 0;
  if (local == 0) return {};
  Reservation slots = slots_->reserve(local, hold);
  int marked = 0;
  for (pg::NewTask& task : commit.tasks) {
    task.claim = marked < slots.count() && runs_here(task);
    marked += task.claim ? 1 : 0;
  }
  commit.claim_owner = settings_.owner;
  commit.lease_margin = settings_.lease_margin;
  return slots;
}

void Replayer::launch(std::vector<pg::ClaimedTask> claimed, Reservation slots) {
  if (slots_) slots_->launch(std::move(claimed), std::move(slots));
}

void Replayer::committed(JournalCache& journal, const Planned& planned, int first_seq,
                         std::chrono::steady_clock::time_point started) {
  ++metrics_.replays;
  metrics_.replay_latency.observe(std::chrono::steady_clock::now() - started);
  if (planned.ended) {
    if (planned.commit.status == journal::RunStatus::completed) ++metrics_.workflows_completed;
    if (planned.commit.status == journal::RunStatus::failed) ++metrics_.workflows_failed;
    if (has_running_children(journal, planned.commit)) cancel_children(planned.commit.run_id);
    caches_.forget(planned.commit.run_id);
    signals_.run_ended(planned.commit.run_id);
    return;
  }
  journal.replayed_seq = planned.commit.seen_seq;
  if (first_seq == journal.next_seq) {
    // Nothing arrived in between: our events are the journal's tail, so keep the copy whole.
    int seq = first_seq;
    for (const pg::NewEvent& e : planned.commit.events) journal.apply({seq++, e.kind, e.step, e.name, e.data});
  }
  if (static_cast<int>(planned.commit.tasks.size()) > planned.slots.count()) {
    signals_.task_work.notify();  // for any dispatcher
  }
}

bool Replayer::has_running_children(const JournalCache& journal, const pg::ReplayCommit& commit) {
  for (const pg::NewChild& child : commit.children) {
    if (child.parent_close == "cancel") return true;
  }
  for (const StepRecord& step : journal.steps) {
    if (step.kind == StepKind::child && !step.done) return true;  // its policy is the database's to check
  }
  return false;
}

void Replayer::cancel_children(const std::string& run_id) {
  try {
    const auto cancelled = store_.cancel_children(run_id);
    if (!cancelled.empty()) logger().debug("cancelled {} child run(s) of run {}", cancelled.size(), run_id);
  } catch (const std::exception& e) {
    // The sweep every engine runs cancels them later.
    logger().warn("cancelling the children of run {} failed (the sweep will): {}", run_id, e.what());
  }
}

}  // namespace durable::detail
