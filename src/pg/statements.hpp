// Every SQL statement durable runs, each named and prepared once per connection, or run from its
// text on connections through a transaction pooler (EngineOptions::pooler_mode).
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pg/database.hpp"

namespace durable::pg {

// Statement names, for exec_prepared.
namespace stmt {
inline constexpr const char* start_workflow = "start_workflow";
inline constexpr const char* retire_run = "retire_run";
inline constexpr const char* read_workflow = "read_workflow";
inline constexpr const char* read_run = "read_run";
inline constexpr const char* own_start = "own_start";
inline constexpr const char* claim_workflows = "claim_workflows";
inline constexpr const char* reclaim_workflows = "reclaim_workflows";
inline constexpr const char* release_run = "release_run";
inline constexpr const char* read_journal = "read_journal";
inline constexpr const char* commit_replay = "commit_replay";
inline constexpr const char* commit_replay_plain = "commit_replay_plain";
inline constexpr const char* continue_run = "continue_run";
inline constexpr const char* cancel_workflow = "cancel_workflow";
inline constexpr const char* request_cancel = "request_cancel";
inline constexpr const char* cancel_children = "cancel_children";
inline constexpr const char* cancel_orphans = "cancel_orphans";
inline constexpr const char* read_child_ids = "read_child_ids";
inline constexpr const char* send_message = "send_message";
inline constexpr const char* read_inbox = "read_inbox";
inline constexpr const char* own_message = "own_message";
inline constexpr const char* read_event = "read_event";
inline constexpr const char* claim_tasks = "claim_tasks";
inline constexpr const char* reclaim_tasks = "reclaim_tasks";
inline constexpr const char* complete_steps = "complete_steps";
inline constexpr const char* open_guard = "open_guard";
inline constexpr const char* close_guard = "close_guard";
inline constexpr const char* guard_held = "guard_held";
inline constexpr const char* retry_task = "retry_task";
inline constexpr const char* heartbeat = "heartbeat";
inline constexpr const char* unwanted_tasks = "unwanted_tasks";
inline constexpr const char* task_outcome = "task_outcome";
inline constexpr const char* attempt_retried = "attempt_retried";
inline constexpr const char* step_completed = "step_completed";
inline constexpr const char* release_task = "release_task";
inline constexpr const char* block_task = "block_task";
inline constexpr const char* lock_key = "lock_key";
inline constexpr const char* wake_key_waiters = "wake_key_waiters";
inline constexpr const char* hold_keys = "hold_keys";
inline constexpr const char* release_keys = "release_keys";
inline constexpr const char* reusable_result = "reusable_result";
inline constexpr const char* queue_age = "queue_age";
inline constexpr const char* workflow_queue_age = "workflow_queue_age";
inline constexpr const char* block_run = "block_run";
inline constexpr const char* wake_blocked = "wake_blocked";
inline constexpr const char* blocked_count = "blocked_count";
inline constexpr const char* engine_alive = "engine_alive";
inline constexpr const char* engine_stopped = "engine_stopped";
inline constexpr const char* db_now_us = "db_now_us";
inline constexpr const char* reserve_lease_tokens = "reserve_lease_tokens";
inline constexpr const char* create_schedule = "create_schedule";
inline constexpr const char* update_schedule = "update_schedule";
inline constexpr const char* pause_schedule = "pause_schedule";
inline constexpr const char* delete_schedule = "delete_schedule";
inline constexpr const char* read_schedules = "read_schedules";
inline constexpr const char* due_schedules = "due_schedules";
inline constexpr const char* advance_schedule = "advance_schedule";
inline constexpr const char* next_schedule_in = "next_schedule_in";
inline constexpr const char* advance_clock = "advance_clock";  // the test kit's
inline constexpr const char* set_clock = "set_clock";

// Flow control's (src/pg/sql/queues/).
inline constexpr const char* lock_queue = "queues/lock_queue";
inline constexpr const char* age_lines = "queues/age_lines";
inline constexpr const char* admit_queued = "queues/admit_queued";
inline constexpr const char* lock_empty_lines = "queues/lock_empty_lines";
inline constexpr const char* retire_lines = "queues/retire_lines";
inline constexpr const char* claim_queued_tasks = "queues/claim_queued_tasks";
inline constexpr const char* attempt_retry_in = "queues/attempt_retry_in";
inline constexpr const char* pause_type = "queues/pause_type";
inline constexpr const char* tasks_waiting = "queues/tasks_waiting";
inline constexpr const char* release_place = "queues/release_place";
inline constexpr const char* paused_types = "queues/paused_types";
inline constexpr const char* paused_names = "queues/paused_names";
inline constexpr const char* define_queue = "queues/define_queue";
inline constexpr const char* pause_queue = "queues/pause_queue";
inline constexpr const char* read_queues = "queues/read_queues";
inline constexpr const char* queue_keys = "queues/queue_keys";
inline constexpr const char* defined_queues = "queues/defined_queues";
inline constexpr const char* debounce_into = "queues/debounce_into";
inline constexpr const char* deduplicated_run = "queues/deduplicated_run";
// The management API's (src/pg/sql/runs/).
inline constexpr const char* any_due_run = "runs/any_due_run";
inline constexpr const char* audit_page = "runs/audit_page";
inline constexpr const char* copy_fork_journal = "runs/copy_fork_journal";
inline constexpr const char* copy_fork_tasks = "runs/copy_fork_tasks";
inline constexpr const char* count_due_runs = "runs/count_due_runs";
inline constexpr const char* count_in_audit = "runs/count_in_audit";
inline constexpr const char* count_runs = "runs/count_runs";
inline constexpr const char* count_runs_at_most = "runs/count_runs_at_most";
inline constexpr const char* delete_history = "runs/delete_history";
inline constexpr const char* delete_run = "runs/delete_run";
inline constexpr const char* expire_idempotent_results = "runs/expire_idempotent_results";
inline constexpr const char* find_audit = "runs/find_audit";
inline constexpr const char* history_attempts = "runs/history_attempts";
inline constexpr const char* history_events = "runs/history_events";
inline constexpr const char* insert_audit = "runs/insert_audit";
inline constexpr const char* insert_fork = "runs/insert_fork";
inline constexpr const char* journal_resumed = "runs/journal_resumed";
inline constexpr const char* list_runs = "runs/list_runs";
inline constexpr const char* lock_retention = "runs/lock_retention";
inline constexpr const char* promote_latest = "runs/promote_latest";
inline constexpr const char* prune_runs = "runs/prune_runs";
inline constexpr const char* read_run_info = "runs/read_run_info";
inline constexpr const char* reopen_tasks = "runs/reopen_tasks";
inline constexpr const char* resume_run = "runs/resume_run";
inline constexpr const char* retire_ended_latest = "runs/retire_ended_latest";
inline constexpr const char* run_exists = "runs/run_exists";
inline constexpr const char* share_run = "runs/share_run";
inline constexpr const char* stats_activity_queues = "runs/stats_activity_queues";
inline constexpr const char* stats_instances = "runs/stats_instances";
inline constexpr const char* stats_now = "runs/stats_now";
inline constexpr const char* stats_oldest_running = "runs/stats_oldest_running";
inline constexpr const char* stats_runs = "runs/stats_runs";
inline constexpr const char* stats_workflow_queues = "runs/stats_workflow_queues";
inline constexpr const char* unblock_run = "runs/unblock_run";
}  // namespace stmt

// The channel engines LISTEN on for each kind of wake-up.
std::string wake_channel(const std::string& schema, Wake kind);

// Every statement's name and text, for schema `schema`.
std::vector<std::pair<std::string, std::string>> statement_texts(const std::string& schema);

// Prepares every statement, or those in `only`, each under `prefix` + its name.
void prepare_statements(pqxx::connection& conn, const std::string& schema, const std::vector<std::string>& only = {},
                        const std::string& prefix = {});

// Every statement's text by name, for schema `schema`: what runs unprepared.
using StatementTexts = std::unordered_map<std::string, std::string>;
std::shared_ptr<const StatementTexts> statement_text_map(const std::string& schema);

// While one lives, the statements exec() runs on `conn` from this thread run from `texts`,
// unprepared: behind a pooler in transaction mode a session (and what was prepared on it) may
// be another server connection at each transaction. nullptr texts: prepared, as everywhere else.
// Scopes nest; exec() on any other connection runs prepared.
class UnpreparedScope {
 public:
  UnpreparedScope(const pqxx::connection_base& conn, const StatementTexts* texts);
  ~UnpreparedScope();
  UnpreparedScope(const UnpreparedScope&) = delete;
  UnpreparedScope& operator=(const UnpreparedScope&) = delete;

 private:
  const pqxx::connection_base* previous_conn_;
  const StatementTexts* previous_texts_;
};

// The text statement `name` runs from on tx's connection now, or nullptr when it runs prepared.
const std::string* unprepared_text(const pqxx::transaction_base& tx, const char* name);

// Runs statement `name` (stmt::) with `args`: prepared, or from its text inside an UnpreparedScope.
template <typename... Args>
pqxx::result exec(pqxx::transaction_base& tx, const char* name, Args&&... args) {
  // built SQL: a statement file's text (src/pg/sql/), its values bound as $n
  if (const std::string* text = unprepared_text(tx, name)) return tx.exec_params(*text, std::forward<Args>(args)...);
  return tx.exec_prepared(name, std::forward<Args>(args)...);
}
// exec() that throws unless the statement returned exactly one row, which it returns.
template <typename... Args>
pqxx::row exec1(pqxx::transaction_base& tx, const char* name, Args&&... args) {
  // built SQL: a statement file's text (src/pg/sql/), its values bound as $n
  if (const std::string* text = unprepared_text(tx, name)) return tx.exec_params1(*text, std::forward<Args>(args)...);
  return tx.exec_prepared1(name, std::forward<Args>(args)...);
}
// exec() that throws unless the statement returned no rows.
template <typename... Args>
pqxx::result exec0(pqxx::transaction_base& tx, const char* name, Args&&... args) {
  // built SQL: a statement file's text (src/pg/sql/), its values bound as $n
  if (const std::string* text = unprepared_text(tx, name)) return tx.exec_params0(*text, std::forward<Args>(args)...);
  return tx.exec_prepared0(name, std::forward<Args>(args)...);
}

}  // namespace durable::pg
