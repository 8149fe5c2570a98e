#include "pipeline/runner.hpp"

#include <algorithm>
#include <iterator>
#include <random>

#include "base/exceptions.hpp"
#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "base/uuid.hpp"
#include "replay/decide.hpp"

namespace durable::detail {

Runner::Runner(StageParts parts, ActivitySlots* slots)
    : parts_(std::move(parts)), slots_(slots), names_json_(parts_.registry.workflow_names_json()) {}

void Runner::offer(pg::ClaimedWorkflow claim) {
  {
    std::lock_guard lock(offered_mutex_);
    offered_.push_back(std::move(claim));
  }
  parts_.signals.workflow_work.notify_one();
}

int Runner::offered_count() {
  std::lock_guard lock(offered_mutex_);
  return static_cast<int>(offered_.size());
}

std::optional<pg::ClaimedWorkflow> Runner::take_offered() {
  std::lock_guard lock(offered_mutex_);
  if (offered_.empty()) return std::nullopt;
  auto claim = std::move(offered_.front());
  offered_.pop_front();
  return claim;
}

void Runner::loop() {
  std::mt19937 jitter{std::random_device{}()};
  for (;;) {
    const auto seen = parts_.signals.workflow_work.generation();
    std::optional<pg::ClaimedWorkflow> claim = take_offered();  // leased to us already: no claim
    if (!claim && parts_.stopping.load()) return;
    if (!claim) {
      // Up to one run per runner thread in one claim: the others are handed theirs, or take them
      // as soon as they are free (a wait of one replay at most, well within the lease).
      const int limit = std::max(1, parts_.options.workflow_max_concurrency - offered_count());
      try {
        const auto started = std::chrono::steady_clock::now();
        auto claimed = parts_.store.claim_workflows(names_json_, limit, parts_.owner, parts_.options.workflow_lease);
        if (!claimed.empty()) {
          parts_.metrics.claim_latency.observe(std::chrono::steady_clock::now() - started);
          claim = std::move(claimed.front());
          for (std::size_t i = 1; i < claimed.size(); ++i) offer(std::move(claimed[i]));
        }
      } catch (const std::exception& e) {
        detail::logger().warn("claiming workflows failed: {}", e.what());
      }
    }
    if (claim) {
      parts_.signals.workflow_work.notify_one();  // there may be more: pass the wake-up on
      try {
        process(*claim);
      } catch (const std::exception& e) {
        // Nothing was committed; the lease runs out and the workflow is replayed again.
        detail::logger().warn("replay of workflow '{}' failed and will be retried: {}", claim->workflow_id, e.what());
        forget(claim->run_id);
      }
    } else {
      const auto poll = parts_.options.poll_interval;
      const auto spread = std::uniform_int_distribution<long>(0, poll.count() / 4 + 1)(jitter);
      parts_.signals.workflow_work.wait_for(seen, poll + std::chrono::milliseconds{spread});
    }
  }
}

std::shared_ptr<JournalCache> Runner::cached(const pg::ClaimedWorkflow& claim) {
  std::lock_guard lock(cache_mutex_);
  auto it = cache_.find(claim.run_id);
  if (it != cache_.end()) return it->second;
  if (cache_.size() >= max_cached_) cache_.clear();  // crude bound: evicted journals reload from the database
  auto fresh = std::make_shared<JournalCache>();
  fresh->run_id = claim.run_id;
  fresh->name = claim.name;
  cache_[claim.run_id] = fresh;
  return fresh;
}

void Runner::forget(const std::string& run_id) {
  std::lock_guard lock(cache_mutex_);
  cache_.erase(run_id);
}

std::shared_ptr<JournalCache> Runner::journal_of(const pg::ClaimedTask& task) {
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(task.run_id);
    if (it != cache_.end()) return it->second;
  }
  if (parts_.registry.workflows.empty()) return nullptr;  // an activity-only engine replays nothing
  try {
    pg::JournalRead read = parts_.store.read_journal(task.run_id, 0);
    if (read.run_id.empty() || !parts_.registry.workflows.count(read.name)) return nullptr;
    auto fresh = std::make_shared<JournalCache>();
    fresh->run_id = std::move(read.run_id);
    fresh->name = std::move(read.name);
    fresh->replayed_seq = read.replayed_seq;
    fresh->apply(read.events);
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= max_cached_) cache_.clear();                        // as in cached()
    return cache_.try_emplace(task.run_id, std::move(fresh)).first->second;  // or whoever was first
  } catch (const std::exception& e) {
    detail::logger().debug("journal of workflow '{}' not loaded: {}", task.workflow_id, e.what());
    return nullptr;
  }
}

bool Runner::knows_step(JournalCache& journal, const pg::ClaimedTask& task) {
  if (task.step < 0) return false;
  if (task.step < static_cast<int>(journal.steps.size())) return true;
  // The step was scheduled after the journal was cached (by another engine): read the new events.
  try {
    pg::JournalRead read = parts_.store.read_journal(task.run_id, journal.next_seq);
    if (read.run_id.empty()) {  // the run was deleted: this cache is of no use
      forget(task.run_id);
      return false;
    }
    journal.replayed_seq = read.replayed_seq;  // another engine's replays may have read further
    journal.apply(read.events);
  } catch (const std::exception& e) {
    detail::logger().debug("journal of workflow '{}' not brought up to date: {}", task.workflow_id, e.what());
    forget(task.run_id);
    return false;
  }
  return task.step < static_cast<int>(journal.steps.size());
}

void Runner::read_inbox(const JournalCache& journal, const std::set<std::string>& topics, Inbox& inbox) {
  constexpr int page = 1000;
  for (const std::string& topic : topics) {
    Inbox::Topic& t = inbox.topics[topic];
    const int after = t.messages.empty() ? 0 : t.messages.back().seq;
    auto [sent, messages] = parts_.store.read_inbox(journal.run_id, topic, after, page);
    if (inbox.messages_sent < 0) inbox.messages_sent = sent;  // the earliest count: a send after it replays again
    t.complete = static_cast<int>(messages.size()) < page;
    std::move(messages.begin(), messages.end(), std::back_inserter(t.messages));
  }
}

Runner::Planned Runner::plan(const JournalCache& journal, const std::string& workflow_id, std::int64_t now_us,
                             SlotHold* hold, bool may_read_inbox) {
  Inbox inbox;
  ChildIds ids;
  const OnNondeterminism policy = parts_.options.on_nondeterminism;
  Decisions decided = decide(parts_.registry, journal, workflow_id, now_us, inbox, ids, policy);
  Planned planned;
  if (decided.blocked) {
    planned.needs_claim = !may_read_inbox;  // a block is written under a claim's lease
    planned.blocked = std::move(decided.blocked);
    return planned;
  }
  auto delivers_cancel = [&] {
    return std::any_of(decided.events.begin(), decided.events.end(),
                       [](const pg::NewEvent& e) { return e.kind == journal::EventKind::cancel_delivered; });
  };
  const bool continues = decided.status == journal::RunStatus::continued;  // commits in a transaction of two statements
  if (!may_read_inbox && (!decided.published.empty() || !decided.children.empty() || delivers_cancel() || continues)) {
    planned.needs_claim = true;
    return planned;
  }
  while (!decided.complete()) {
    if (!may_read_inbox) {
      planned.needs_claim = true;
      return planned;
    }
    if (!decided.wanted_topics.empty()) {
      read_inbox(journal, decided.wanted_topics, inbox);
      failpoint("replay.after_inbox_read");  // a message sent from here on must still wake the run
    }
    if (!decided.wanted_ids.empty()) {
      auto taken = parts_.store.read_child_ids(decided.wanted_ids);
      for (const std::string& id : decided.wanted_ids) {
        auto it = taken.find(id);
        ids.latest[id] = it == taken.end() ? std::nullopt : std::optional<pg::TakenId>(it->second);
      }
      failpoint("replay.after_child_ids_read");  // an id taken from here on must refuse the commit
    }
    decided = decide(parts_.registry, journal, workflow_id, now_us, inbox, ids, policy);
    if (decided.blocked) {
      planned.blocked = std::move(decided.blocked);
      return planned;
    }
  }
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
  commit.delivers_cancel = delivers_cancel();
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
  const bool encoded = parts_.options.codec != nullptr;
  if (commit.status == journal::RunStatus::failed) {
    detail::logger().info("workflow '{}' failed: {}: {}", workflow_id, commit.error_type,
                          detail::loggable(commit.error_message, encoded));
  } else if (commit.status == journal::RunStatus::cancelled) {
    detail::logger().info("workflow '{}' ended cancelled: {}", workflow_id,
                          detail::loggable(commit.error_message, encoded));
  }
  if (slots_ && !parts_.stopping.load() && !commit.tasks.empty()) planned.slots = lease_at_once(commit, hold);
  return planned;
}

// Run at once: tasks of activities this engine runs take its free slots in the same commit,
// leased to it, instead of waiting for a claim. Durable all the same: they are rows like any other.
Reservation Runner::lease_at_once(pg::ReplayCommit& commit, SlotHold* hold) {
  const auto runs_here = [&](const pg::NewTask& task) {
    return !task.dropped && parts_.registry.activities.count(task.name) > 0;
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
  commit.claim_owner = parts_.owner;
  commit.lease_margin = parts_.options.lease_margin;
  return slots;
}

void Runner::committed(JournalCache& journal, const Planned& planned, int first_seq,
                       std::chrono::steady_clock::time_point started) {
  ++parts_.metrics.replays;
  parts_.metrics.replay_latency.observe(std::chrono::steady_clock::now() - started);
  if (planned.ended) {
    if (planned.commit.status == journal::RunStatus::completed) ++parts_.metrics.workflows_completed;
    if (planned.commit.status == journal::RunStatus::failed) ++parts_.metrics.workflows_failed;
    if (has_running_children(journal, planned.commit)) cancel_children(planned.commit.run_id);
    forget(planned.commit.run_id);
    parts_.signals.run_ended();
    return;
  }
  journal.replayed_seq = planned.commit.seen_seq;
  if (first_seq == journal.next_seq) {
    // Nothing arrived in between: our events are the journal's tail, so keep the cache whole.
    int seq = first_seq;
    for (const pg::NewEvent& e : planned.commit.events) journal.apply({seq++, e.kind, e.step, e.name, e.data});
  }
  if (static_cast<int>(planned.commit.tasks.size()) > planned.slots.count()) {
    parts_.signals.task_work.notify();  // for any dispatcher
  }
}

bool Runner::has_running_children(const JournalCache& journal, const pg::ReplayCommit& commit) {
  for (const pg::NewChild& child : commit.children) {
    if (child.parent_close == "cancel") return true;
  }
  for (const StepRecord& step : journal.steps) {
    if (step.kind == StepKind::child && !step.done) return true;  // its policy is the database's to check
  }
  return false;
}

void Runner::cancel_children(const std::string& run_id) {
  try {
    const auto cancelled = parts_.store.cancel_children(run_id);
    if (!cancelled.empty()) detail::logger().debug("cancelled {} child run(s) of run {}", cancelled.size(), run_id);
  } catch (const std::exception& e) {
    // The sweep every engine runs cancels them later.
    detail::logger().warn("cancelling the children of run {} failed (the sweep will): {}", run_id, e.what());
  }
}

void Runner::process(const pg::ClaimedWorkflow& claim) {
  const auto started = std::chrono::steady_clock::now();
  auto journal = cached(claim);
  std::unique_lock busy(journal->busy);
  // The cache may hold more events than the claim saw: a dispatcher thread may have read the
  // journal after the claim (outcomes are journaled under a live replay lease too). Newer, not
  // wrong: the commit compares the length the replay saw with the database's.
  journal->replayed_seq = claim.replayed_seq;
  if (journal->next_seq == 0 && claim.next_seq == 1 && claim.start_data) {
    journal->apply({0, journal::EventKind::workflow_started, -1, "", *claim.start_data});  // a fresh run: no read
  } else if (journal->next_seq < claim.next_seq) {
    try {
      journal->apply(parts_.store.read_journal(claim.run_id, journal->next_seq).events);
    } catch (const CodecError& e) {
      block_undecodable(claim, e);
      forget(claim.run_id);
      return;
    }
  }
  Planned planned;
  pg::ReplayOutcome outcome;
  for (int tries = 1;; ++tries) {
    planned = plan(*journal, claim.workflow_id, claim.now_us, nullptr, true);
    if (planned.blocked) {
      block(claim, *journal, *planned.blocked);
      return;
    }
    planned.commit.lease_token = claim.lease_token;
    failpoint("replay.before_commit");  // what comes from here on was not read: a cancel request, say
    outcome = parts_.store.commit_replay(planned.commit);  // a throw frees the slots
    // Refused: a child id the replay read as free was taken before the commit (decided again with
    // the ids read anew, the start journals WorkflowAlreadyStarted instead), or the journal of a
    // run continuing as new grew (decided again with what came).
    if (!outcome.refused) break;
    if (tries == 10) throw Error("what the replay read kept changing before its commit; retrying later");
    detail::logger().debug("replay of '{}' read ids or a journal that changed before its commit: deciding again",
                           claim.workflow_id);
    journal->apply(parts_.store.read_journal(claim.run_id, journal->next_seq).events);
  }
  failpoint("replay.after_commit");  // what went in stays in: no child starts again, say
  if (outcome.base) {
    write_log_lines(planned.log_lines);
    committed(*journal, planned, *outcome.base, started);
  } else {
    detail::logger().debug("replay of '{}' lost its lease, or committed on a connection that then broke",
                           claim.workflow_id);
    forget(claim.run_id);
  }
  busy.unlock();  // before its tasks run: their completions continue in place with this journal
  if (slots_) slots_->launch(std::move(outcome.claimed), std::move(planned.slots));
}

void Runner::block_undecodable(const pg::ClaimedWorkflow& claim, const CodecError& error) {
  const std::string message = fmt::format("its journal does not decode: {}", error.what());
  const Json reason = {{"step", -1}, {"journaled", ""}, {"asked", ""}, {"message", message}};
  const int times = parts_.store.block_run(claim.run_id, claim.lease_token, reason, parts_.options.poll_interval);
  if (times == 1) {
    logger().warn(
        "workflow '{}' (run {}) is blocked, not failed, until an engine whose codec decodes its journal takes "
        "it on (EngineOptions::codec; this engine tries it again now and then): {}",
        claim.workflow_id, claim.run_id, message);
  }
}

void Runner::block(const pg::ClaimedWorkflow& claim, const JournalCache& journal, const NonDeterminismError& error) {
  const Json divergence = {
      {"step", error.step()}, {"journaled", error.journaled()}, {"asked", error.asked()}, {"message", error.what()}};
  const int times = parts_.store.block_run(claim.run_id, claim.lease_token, divergence, parts_.options.poll_interval);
  if (times == 1) {
    logger().warn(
        "workflow '{}' ({}, run {}) is blocked, not failed, and stays running until an engine of another app version "
        "than '{}', or Engine::runs().resume(), takes it on (this build tries it again now and then): {}",
        claim.workflow_id, journal.name, claim.run_id, parts_.options.app_version, error.what());
  } else if (times > 1) {
    logger().debug("workflow '{}' (run {}) is still blocked ({} tries)", claim.workflow_id, claim.run_id, times);
  }
}

std::optional<Runner::Continued> Runner::finish_and_continue(const pg::ClaimedTask& task, bool succeeded,
                                                             const Json& result, const ErrorInfo& error,
                                                             bool record_attempt, SlotHold* hold,
                                                             const CommitStep& commit) {
  std::shared_ptr<JournalCache> journal = journal_of(task);
  if (!journal) return std::nullopt;
  std::unique_lock busy(journal->busy, std::try_to_lock);
  if (!busy.owns_lock() || !knows_step(*journal, task)) return std::nullopt;

  // The outcome's event as the statement journals it, applied to the cache for the replay and
  // undone unless the replay commits with it.
  const int expected_seq = journal->next_seq;
  const StepRecord before = journal->steps[static_cast<std::size_t>(task.step)];
  auto undo = [&] {
    journal->next_seq = expected_seq;
    journal->steps[static_cast<std::size_t>(task.step)] = before;
  };
  const int attempts = record_attempt ? task.attempt : task.attempt - 1;  // as complete_steps journals it
  const Json data = succeeded
                        ? Json{{"result", result}, {"attempts", attempts}}
                        : Json{{"error_type", error.type}, {"error_message", error.message}, {"attempts", attempts}};
  // The replay's clock: the database's at the claim, moved on by our own clock since (never ahead of the database's).
  const std::int64_t now_us =
      task.claimed_at_us +
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - task.received).count();

  const auto started = std::chrono::steady_clock::now();
  Planned planned;
  try {
    journal->apply({expected_seq,
                    succeeded ? journal::EventKind::activity_completed : journal::EventKind::activity_failed, task.step,
                    task.name, data});
    // Not reading the inbox here: a replay that receives commits through a claim, whose
    // statement checks that no message came since the inbox was read (and so does one that publishes).
    planned = plan(*journal, task.workflow_id, now_us, hold, false);
  } catch (const std::exception& e) {
    undo();
    detail::logger().debug("workflow '{}' cannot continue in place: {}", task.workflow_id, e.what());
    return std::nullopt;
  }
  if (planned.needs_claim) {
    undo();
    return std::nullopt;
  }
  pg::StepOutcome outcome;
  try {
    outcome = commit({&task, succeeded, result, error.type, error.message, record_attempt, &planned.commit,
                      expected_seq, journal->run_id});
  } catch (...) {
    undo();
    throw;  // the slots it reserved are freed with `planned`
  }
  if (outcome.continued) {
    write_log_lines(planned.log_lines);
    committed(*journal, planned, *outcome.base + 1, started);
  } else if (outcome.finish == pg::FinishOutcome::committed_earlier) {
    forget(task.run_id);  // whether the replay went in with it is not known: reload next time
  } else {
    undo();
  }
  busy.unlock();  // before its tasks run: their completions continue in place with this journal
  for (auto& next : outcome.claimed) next.handovers = task.handovers + 1;
  return Continued{std::move(outcome), std::move(planned.slots)};
}

}  // namespace durable::detail
