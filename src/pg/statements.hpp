// Every SQL statement durable runs, each named and prepared once per connection.
#pragma once

#include <pqxx/pqxx>
#include <string>

namespace durable::pg {

// Statement names, for exec_prepared.
namespace stmt {
inline constexpr const char* start_workflow = "start_workflow";
inline constexpr const char* read_workflow = "read_workflow";
inline constexpr const char* claim_workflows = "claim_workflows";
inline constexpr const char* reclaim_workflows = "reclaim_workflows";
inline constexpr const char* read_journal = "read_journal";
inline constexpr const char* commit_replay = "commit_replay";
inline constexpr const char* cancel_workflow = "cancel_workflow";
inline constexpr const char* claim_tasks = "claim_tasks";
inline constexpr const char* reclaim_tasks = "reclaim_tasks";
inline constexpr const char* finish_task = "finish_task";
inline constexpr const char* retry_task = "retry_task";
inline constexpr const char* task_outcome = "task_outcome";
inline constexpr const char* release_task = "release_task";
inline constexpr const char* notify = "notify";
}  // namespace stmt

// The NOTIFY channel for a schema: engines LISTEN on it; no payload is ever sent.
std::string wake_channel(const std::string& schema);

void prepare_statements(pqxx::connection& conn, const std::string& schema);

}  // namespace durable::pg
