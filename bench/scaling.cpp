// Scaling: 10-step throughput on one engine process when the tables are already big (a backlog
// of tasks queued for another service, or a million completed workflows), against empty ones.
#include <fmt/format.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

namespace {

// What the engine stores as a task's options (and an activity_scheduled event's) for a call
// with default ActivityOptions: copied from a real run.
constexpr auto default_task_options =
    R"('{"jitter": 0.0, "backoff": "constant", "base_ms": 0, "timeout_ms": 30000, "max_attempts": 1, )"
    R"("max_backoff_ms": 60000, "idempotency_key_hex": null, "max_retry_horizon_ms": 86400000, )"
    R"("non_retryable_errors": []}'::jsonb)";

// Runs an engine on `schema` once, which creates the tables at the current schema version.
void migrate(const std::string& url, const std::string& schema) {
  durable::Engine engine(engine_options(url, schema));
  register_definitions(engine);
  engine.start();
}

// Loads the state's rows in one transaction, then leaves the tables as a long-running system
// would have them: vacuumed (visibility map and hint bits set, so the timed run does not pay
// for first touches of the loaded pages), analyzed (the planner knows the row counts), and
// checkpointed (the timed run does not pay for the load's full-page writes).
void load_rows(const std::string& url, const std::string& schema, const TableState& state) {
  pqxx::connection conn(url);
  auto start = Clock::now();
  {
    pqxx::work tx(conn);
    for (const auto& sql : state.load_sql) {
      tx.exec0(fmt::format(fmt::runtime(sql), fmt::arg("s", schema), fmt::arg("rows", state.rows),
                           fmt::arg("workflow", NoopChain::name), fmt::arg("activity", Noop::name),
                           fmt::arg("options", default_task_options)));
    }
    tx.commit();
  }
  progress("scaling: inserted in {:.1f} s", seconds_since(start));
  start = Clock::now();
  pqxx::nontransaction tx(conn);  // VACUUM and CHECKPOINT cannot run inside a transaction
  tx.exec0(in_schema("VACUUM ANALYZE {s}.workflows, {s}.journal, {s}.tasks, {s}.attempts", schema));
  progress("scaling: vacuumed and analyzed in {:.1f} s", seconds_since(start));
  start = Clock::now();
  try {
    tx.exec0("CHECKPOINT");
  } catch (const pqxx::sql_error& e) {  // needs superuser or pg_checkpoint: run without it
    progress("scaling: no CHECKPOINT after loading ({})", e.what());
  }
  progress("scaling: checkpointed in {:.1f} s", seconds_since(start));
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
  return {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, next_seq, runnable, claim_token,
                          created_at, updated_at, ended_at)
SELECT 'done-' || g, md5('done-' || g)::uuid, '{workflow}', 'completed', '1', '0', 4, false,
       md5('claim-' || g)::uuid::text, now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)",
          R"(
INSERT INTO {s}.journal (run_id, workflow_id, seq, kind, step, name, data, created_at)
SELECT md5('done-' || g)::uuid, 'done-' || g, e.seq, e.kind, e.step, e.name, e.data, now() - interval '1 day'
FROM generate_series(1, {rows}) AS g,
     (VALUES (0, 'workflow_started', NULL::integer, NULL::text, jsonb_build_object('input', 1)),
             (1, 'activity_scheduled', 0, '{activity}', jsonb_build_object('input', 0, 'options', {options})),
             (2, 'activity_completed', 0, '{activity}', jsonb_build_object('result', 0, 'attempts', 1)),
             (3, 'workflow_completed', NULL, NULL, jsonb_build_object('result', 0))) AS e(seq, kind, step, name, data))",
          R"(
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, attempt, available_at, lease_token,
                      lease_owner, claim_token, attempt_started_at, first_started_at, result, created_at, updated_at)
SELECT md5('done-' || g)::uuid, 'done-' || g, 0, '{activity}', '0', {options}, 'completed', 1, now() - interval '1 day', g,
       'default@loaded', md5('task-claim-' || g)::uuid::text, now() - interval '1 day', now() - interval '1 day', '0',
       now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)",
          // After the tasks: one attempt per task just loaded (the schema holds nothing else).
          R"(
INSERT INTO {s}.attempts (task_id, attempt, started_at, ended_at, outcome)
SELECT task_id, 1, attempt_started_at, updated_at, 'completed' FROM {s}.tasks)"};
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
