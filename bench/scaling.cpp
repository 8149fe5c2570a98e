// Scaling: 10-step throughput on one engine process when the tables are already big (a backlog
// of tasks queued for another service, or a million completed workflows), against empty ones.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

namespace {

// The state's rows, then the tables as a long-running system would have them (load_by_sql).
void load_rows(const std::string& url, const std::string& schema, const TableState& state) {
  std::vector<std::string> statements;
  for (const auto& sql : state.load_sql) statements.push_back(loading_sql(sql, schema, state.rows));
  load_by_sql(url, schema, statements, "scaling");
}

}  // namespace

std::vector<std::string> queued_tasks_sql() {
  return {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, created_at, updated_at)
SELECT 'queued-' || g, md5('queued-' || g)::uuid, 'served_elsewhere', 'running', '0', 2, false,
       now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, {rows}) AS g)",
          R"(
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, available_at, created_at, updated_at)
SELECT md5('queued-' || g)::uuid, 'queued-' || g, 0, 'served_elsewhere', '0', {options}, 'pending',
       now() - interval '1 hour' + g * interval '1 millisecond', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, {rows}) AS g)"};
}

std::vector<std::string> completed_workflows_sql() {
  std::vector<std::string> sql = {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, next_seq, runnable, claim_token,
                          created_at, updated_at, ended_at)
SELECT 'done-' || g, md5('done-' || g)::uuid, '{workflow}', 'completed', '1', '0', 4, false,
       md5('claim-' || g)::uuid::text, now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)"};
  for (auto& history : one_step_history_sql()) sql.push_back(std::move(history));
  return sql;
}

Result measure_scaling(const std::string& url, const TableState& state, int workflows) {
  progress("scaling: {} x 10-step workflows on 1 engine process, {}", workflows, state.description);
  ScratchSchema schema(url);
  migrate(url, schema.name());
  const auto start = Clock::now();
  load_rows(url, schema.name(), state);
  const double load_seconds = seconds_since(start);
  progress("scaling: loaded {} ({} rows) in {:.1f} s", state.description, state.rows, load_seconds);

  Result result = {{"bench", "scaling"}, {"state", state.name}, {"rows", state.rows}, {"load_seconds", load_seconds}};
  const Result throughput = run_throughput(url, schema.name(), 10, 1, workflows, Starts::while_running);
  for (const auto& [field, value] : throughput.items()) {
    if (field != "bench") result[field] = value;
  }
  return result;
}

void compare_to_empty(Result& result, double empty_steps_per_s) {
  const double ratio = result["steps_per_s"].get<double>() / empty_steps_per_s;
  result["ratio_to_empty"] = ratio;
  result["aim_ratio_to_empty"] = aim_ratio_to_empty;
  result["aim_met"] = ratio >= aim_ratio_to_empty;
}

}  // namespace bench
