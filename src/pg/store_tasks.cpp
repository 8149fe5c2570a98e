// Store's operations on activity tasks: claims, completions, retries, heartbeats, hand-backs and
// the locks of idempotency keys.
#include <algorithm>
#include <map>

#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"
#include "pg/store.hpp"
#include "pg/store_parts.hpp"

namespace durable::pg {

namespace {

using store_parts::claim_with_recovery;
using store_parts::events_json;
using store_parts::leased_at_once;
using store_parts::opened_task;
using store_parts::reclaim_tasks;

// The task's status and whether it still carries `lease_token`; nullopt when there is no such task.
struct TaskState {
  TaskStatus status;
  bool same_lease;
};
std::optional<TaskState> task_state(pqxx::transaction_base& tx, const ClaimedTask& task) {
  auto rows = exec(tx, stmt::task_outcome, task.run_id, task.lease_token, task.step);
  if (rows.empty()) return std::nullopt;
  return TaskState{task_status_from_text(rows[0]["status"].as<std::string>()), rows[0]["same_lease"].as<bool>()};
}

// After a fenced finish matched nothing on a retry: did an earlier try of this very lease commit
// it before the connection dropped? Re-read, never redo. A completed task's row is gone: its
// completed event names the attempt that finished it, which no other lease shares.
bool finished_earlier(pqxx::transaction_base& tx, const StepCommit& c) {
  const ClaimedTask& task = *c.task;
  if (c.succeeded) {
    const int attempt = c.record_attempt ? task.attempt : task.attempt - 1;
    return !task_state(tx, task) && !exec(tx, stmt::step_completed, task.run_id, task.step, attempt).empty();
  }
  auto state = task_state(tx, task);
  return state && state->same_lease && state->status == TaskStatus::failed;
}

// The [activity, key hex] of a task whose idempotency key its waiters wait for.
Json waited_key(const ClaimedTask& task) { return Json::array({task.name, hex_of(*task.options.idempotency_key)}); }

// After a fenced retry matched nothing on a retry: did an earlier try of this attempt schedule it?
// Its attempt row says so (written by that statement only, with the time of the next attempt).
bool retried_earlier(pqxx::transaction_base& tx, const ClaimedTask& task) {
  return !exec(tx, stmt::attempt_retried, task.task_id, task.attempt).empty();
}

}  // namespace

std::vector<ClaimedTask> Store::claim_tasks(const std::string& names_json, const std::string& queues_json, int limit,
                                            const std::string& owner, Duration lease_margin) {
  std::vector<ClaimedTask> claimed;
  const std::int64_t first_token = tokens_.take(limit);
  claim_with_recovery(pool_, [&](pqxx::transaction_base& tx, const std::string& token, bool recovering) {
    auto rows = recovering ? exec(tx, stmt::reclaim_tasks, token)
                           : exec(tx, stmt::claim_tasks, names_json, limit, owner, lease_margin.count(), token,
                                  first_token, queues_json);
    claimed.clear();
    for (const auto& row : rows) claimed.push_back(opened_task(row, seal_));
    return !claimed.empty();
  });
  return claimed;
}

QueuedClaim Store::claim_queued_tasks(const std::string& queue, const std::string& names_json, int limit,
                                      const std::string& owner, Duration lease_margin) {
  QueuedClaim claim;
  const std::int64_t first_token = tokens_.take(limit);
  claim_with_recovery(pool_, [&](pqxx::transaction_base& tx, const std::string& token, bool recovering) {
    claim.tasks.clear();
    claim.retry_in.reset();
    if (recovering) {
      for (const auto& row : exec(tx, stmt::reclaim_tasks, token)) claim.tasks.push_back(opened_task(row, seal_));
      return !claim.tasks.empty();
    }
    if (!exec1(tx, stmt::tasks_waiting, queue, names_json)["waiting"].as<bool>()) return false;
    // The claim counts in a statement begun after the lock: it sees every claim committed before.
    if (exec(tx, stmt::lock_queue, queue).empty()) return false;  // not defined yet: nothing claimed
    for (const auto& row : exec(tx, stmt::claim_queued_tasks, queue, names_json, limit, owner, lease_margin.count(),
                                token, first_token)) {
      claim.tasks.push_back(opened_task(row, seal_));
    }
    if (static_cast<int>(claim.tasks.size()) < limit) {
      auto rows = exec(tx, stmt::attempt_retry_in, queue);
      if (!rows.empty() && !rows[0][0].is_null()) {
        claim.retry_in = Duration{std::max<std::int64_t>(1, rows[0][0].as<std::int64_t>())};
      }
    }
    return !claim.tasks.empty();
  });
  return claim;
}

void Store::release_place(const ClaimedTask& task) {
  pool_.write(stmt::release_place, [&](pqxx::connection& conn, bool) {  // a repeat sets the same
    pqxx::work tx(conn);
    exec0(tx, stmt::release_place, task.run_id, task.step, task.lease_token);
    tx.commit();
  });
}

Json Store::steps_json(const std::vector<const StepCommit*>& steps) {
  Json rows = Json::array();
  for (const StepCommit* c : steps) {
    const ReplayCommit* r = c->replay;
    std::string wf_result = "null";
    if (r) wf_result = r->status == RunStatus::completed ? seal_.sealed_dump(r->result) : r->result.dump();
    rows.push_back(
        {{"task_id", c->task->task_id},
         {"task_run", c->task->run_id},
         {"step", c->task->step},
         {"lease_token", c->task->lease_token},
         {"outcome", to_text(c->succeeded ? TaskStatus::completed : TaskStatus::failed)},
         {"result", c->succeeded ? seal_.sealed_dump(c->result) : c->result.dump()},
         {"error_type", c->error_type},
         {"error_message", seal_.seal_text(c->error_message)},
         {"fp", seal_.on() && c->succeeded && c->task->options.idempotency_key ? Json(seal_.fingerprint(c->task->input))
                                                                               : Json()},
         {"record", c->record_attempt},
         {"expected_seq", r ? c->expected_seq : -1},
         {"replayed_seq", r ? r->replayed_seq : -1},
         {"run_id", r ? Json(c->run_id) : Json()},
         {"claim_token", r ? Json(r->claim_token) : Json()},
         {"events", r ? events_json(r->events, seal_) : Json::array()},
         {"tasks", r ? tasks_json(r->tasks) : Json::array()},
         {"wf_status", to_text(r ? r->status : RunStatus::running)},
         {"wf_result", wf_result},
         {"wf_error_type", r ? r->error_type : std::string()},
         {"wf_error_message", r ? seal_.seal_text(r->error_message) : std::string()},
         {"wake_at_us", r ? r->wake_at_us : -1}});
  }
  return rows;
}

std::vector<StepOutcome> Store::run_complete_steps(pqxx::transaction_base& tx, const char* statement,
                                                   const std::string& rows_text,
                                                   const std::vector<const StepCommit*>& steps,
                                                   const std::string& owner, Duration lease_margin,
                                                   bool maybe_committed, Json& key_waited) {
  std::map<std::int64_t, std::size_t> index;  // task id -> position
  for (std::size_t i = 0; i < steps.size(); ++i) index[steps[i]->task->task_id] = i;
  std::vector<StepOutcome> outcomes(steps.size());
  const auto answer = exec(tx, statement, rows_text, owner, lease_margin.count(), workflows_channel_, tasks_channel_,
                           ended_channel_, app_version_);
  for (const auto& row : answer) {
    const std::size_t i = index.at(row["task_id"].as<std::int64_t>());
    const StepCommit& c = *steps[i];
    StepOutcome& outcome = outcomes[i];
    outcome.now_us = row["now_us"].as<std::int64_t>();
    if (row["key_waiters"].as<bool>()) key_waited.push_back(waited_key(*c.task));
    if (row["finished"].as<bool>()) {
      outcome.finish = FinishOutcome::committed;
      outcome.continued = row["continued"].as<bool>();
      if (outcome.continued) {
        outcome.base = row["base"].as<int>();
        outcome.claimed = leased_at_once(*c.replay, row["claimed"], outcome.now_us);
      }
    } else if (maybe_committed && finished_earlier(tx, c)) {
      // Committed by an earlier try whose answer was lost: whatever it leased at once is ours,
      // and whoever waited for its key may have missed the wake-up.
      outcome.finish = FinishOutcome::committed_earlier;
      if (c.replay) outcome.claimed = reclaim_tasks(tx, c.replay->claim_token, seal_);
      if (c.task->options.idempotency_key) key_waited.push_back(waited_key(*c.task));
    }
  }
  return outcomes;
}

std::vector<StepOutcome> Store::complete_steps(const std::vector<const StepCommit*>& steps, const std::string& owner,
                                               Duration lease_margin) {
  const std::string rows_text = steps_json(steps).dump();
  std::vector<StepOutcome> outcomes;
  Json key_waited = Json::array();  // idempotency keys others wait for
  pool_.write("complete_steps", [&](pqxx::connection& conn, bool maybe_committed) {
    key_waited = Json::array();
    pqxx::nontransaction tx(conn);
    outcomes = run_complete_steps(tx, stmt::complete_steps, rows_text, steps, owner, lease_margin, maybe_committed,
                                  key_waited);
  });
  wake_key_waiters(key_waited);
  return outcomes;
}

std::vector<StepOutcome> Store::complete_steps_in(pqxx::transaction_base& tx, const char* statement,
                                                  const std::vector<const StepCommit*>& steps, const std::string& owner,
                                                  Duration lease_margin, Json& key_waited) {
  return run_complete_steps(tx, statement, steps_json(steps).dump(), steps, owner, lease_margin, false, key_waited);
}

std::optional<StepOutcome> Store::committed_step(const StepCommit& step) {
  std::optional<StepOutcome> outcome;
  pool_.read([&](pqxx::connection& conn) {
    outcome.reset();
    pqxx::read_transaction tx(conn);
    if (!finished_earlier(tx, step)) return;
    outcome.emplace();
    outcome->finish = FinishOutcome::committed_earlier;
    if (step.replay) outcome->claimed = reclaim_tasks(tx, step.replay->claim_token, seal_);
  });
  if (outcome && step.task->options.idempotency_key) wake_key_waiters(Json::array({waited_key(*step.task)}));
  return outcome;
}

void Store::wake_key_waiters_of(const Json& keys) { wake_key_waiters(keys); }

RetryOutcome Store::retry_task(const ClaimedTask& task, Duration delay, const std::string& error_type,
                               const std::string& error_message) {
  RetryOutcome outcome = RetryOutcome::fenced_off;
  bool key_waiters = false;
  const std::string stored_message = seal_.seal_text(error_message);
  pool_.write("retry_task", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::nontransaction tx(conn);
    auto row = exec1(tx, stmt::retry_task, task.run_id, task.lease_token, delay.count(), error_type, stored_message,
                     task.step);
    key_waiters = row["key_waiters"].as<bool>();
    if (row["retried"].as<int>() == 1) {
      outcome = RetryOutcome::retried;
    } else if (row["owned"].as<int>() == 1) {
      outcome = RetryOutcome::past_horizon;
    } else if (maybe_committed && retried_earlier(tx, task)) {
      // An earlier try scheduled the retry and its answer was lost: the retry is ours.
      outcome = RetryOutcome::retried;
      key_waiters = task.options.idempotency_key.has_value();
    } else {
      outcome = RetryOutcome::fenced_off;
    }
  });
  if (key_waiters) wake_key_waiters(Json::array({waited_key(task)}));
  return outcome;
}

HeartbeatOutcome Store::heartbeat(const ClaimedTask& task, Duration lease, const std::string& details) {
  HeartbeatOutcome outcome = HeartbeatOutcome::lease_lost;
  const std::string stored_details = seal_.seal_json_text(details);
  // A repeat of a heartbeat that committed renews the same lease again: no re-read needed.
  pool_.write("heartbeat", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    if (!exec(tx, stmt::heartbeat, task.run_id, task.lease_token, lease.count(), stored_details, task.step).empty()) {
      outcome = HeartbeatOutcome::kept;
      return;
    }
    auto state = task_state(tx, task);
    outcome =
        state && state->status == TaskStatus::cancelled ? HeartbeatOutcome::cancelled : HeartbeatOutcome::lease_lost;
  });
  return outcome;
}

std::vector<std::int64_t> Store::unwanted_tasks(const std::vector<std::int64_t>& task_ids) {
  std::vector<std::int64_t> unwanted;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    unwanted.clear();
    for (const auto& row : exec(tx, stmt::unwanted_tasks, Json(task_ids).dump())) {
      unwanted.push_back(row["task_id"].as<std::int64_t>());
    }
  });
  return unwanted;
}

void Store::release_task(const ClaimedTask& task, Duration delay) {
  // Fenced: a repeat after a commit matches nothing, and the task is handed back either way.
  pool_.write("release_task", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    exec(tx, stmt::release_task, task.run_id, task.lease_token, delay.count(), task.step);
  });
}

int Store::block_task(const ClaimedTask& task, const Json& reason, Duration retry) {
  int times = 0;
  // Fenced: a repeat after a commit matches nothing (0), and the task was handed back either way.
  pool_.write("block_task", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto rows = exec(tx, stmt::block_task, task.run_id, task.lease_token, reason.dump(), app_version_, retry.count(),
                     task.step);
    times = rows.empty() ? 0 : rows[0]["times"].as<int>();
  });
  return times;
}

bool Store::lock_key_or_wait(const ClaimedTask& task) {
  bool locked = false;
  // A repeat decides the same: a lock we took is ours again, a wait we committed left the lease gone.
  pool_.write("lock_key", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto row = exec1(tx, stmt::lock_key, task.run_id, task.lease_token, task.step);
    locked = row["locked"].as<bool>() && row["owned"].as<bool>();
  });
  return locked;
}

namespace {
// [[activity, key hex, lease token], ...]: the locks these attempts hold.
std::string held_keys_json(const std::vector<const ClaimedTask*>& tasks) {
  Json keys = Json::array();
  for (const ClaimedTask* task : tasks) {
    Json key = waited_key(*task);
    key.push_back(std::to_string(task->lease_token));
    keys.push_back(std::move(key));
  }
  return keys.dump();
}
}  // namespace

void Store::hold_keys(const std::vector<const ClaimedTask*>& tasks, Duration hold) {
  if (tasks.empty()) return;
  const std::string keys = held_keys_json(tasks);
  pool_.write("hold_keys", [&](pqxx::connection& conn, bool) {  // holding again only moves the time
    pqxx::nontransaction tx(conn);
    exec0(tx, stmt::hold_keys, keys, hold.count());
  });
}

void Store::release_keys(const std::vector<const ClaimedTask*>& tasks) {
  if (tasks.empty()) return;
  const std::string keys = held_keys_json(tasks);
  pool_.write("release_keys", [&](pqxx::connection& conn, bool) {  // a repeat finds nothing to release
    pqxx::nontransaction tx(conn);
    exec1(tx, stmt::release_keys, keys, tasks_channel_);
  });
}

void Store::wake_key_waiters(const Json& keys) {
  if (keys.empty()) return;
  const std::string ids = keys.dump();
  pool_.write("wake_key_waiters", [&](pqxx::connection& conn, bool) {  // waking twice is harmless
    pqxx::nontransaction tx(conn);
    exec1(tx, stmt::wake_key_waiters, ids, tasks_channel_);
  });
}

std::optional<ReusableResult> Store::reusable_result(const ClaimedTask& task) {
  std::optional<ReusableResult> found;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto rows = exec(tx, stmt::reusable_result, task.run_id, task.step);
    if (rows.empty()) return;
    const std::string fingerprint = rows[0]["input_fingerprint"].as<std::string>();
    // A fingerprint the engine computed under a codec names its key; an md5 one is compared by the
    // database: with the stored input when that is plaintext, else (a result from before the codec
    // was set) with the plaintext input, sent only for this comparison.
    bool same_input = false;
    if (fingerprint.starts_with("$encoded:")) {
      same_input = seal_.same_input(fingerprint, task.input);
    } else if (!seal_.on()) {
      same_input = rows[0]["same_input"].as<bool>();
    } else {
      same_input = tx.exec_params1("SELECT $1 = md5($2::jsonb::text)", fingerprint, task.input.dump())[0].as<bool>();
    }
    found = ReusableResult{seal_.open(Json::parse(rows[0]["result"].c_str()), "an idempotent result"), same_input,
                           rows[0]["workflow_id"].as<std::string>()};
  });
  return found;
}

}  // namespace durable::pg
