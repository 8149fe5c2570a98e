// Every SQL statement durable runs, each named and prepared once per connection.
#pragma once

#include <pqxx/pqxx>
#include <string>
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
inline constexpr const char* read_journal = "read_journal";
inline constexpr const char* commit_replay = "commit_replay";
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
}  // namespace stmt

// The channel engines LISTEN on for each kind of wake-up.
std::string wake_channel(const std::string& schema, Wake kind);

// Every statement's name and text, for schema `schema`.
std::vector<std::pair<std::string, std::string>> statement_texts(const std::string& schema);

// Prepares every statement, or those in `only`, each under `prefix` + its name.
void prepare_statements(pqxx::connection& conn, const std::string& schema, const std::vector<std::string>& only = {},
                        const std::string& prefix = {});

}  // namespace durable::pg
