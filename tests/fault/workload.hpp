// The fault-injection workload: workflows of several activities whose every execution is
// logged and whose side effect is an insert under a unique key, and the checker that proves
// afterwards that nothing was lost or committed twice.
#pragma once

#include <durable/durable.hpp>
#include <durable/pqxx.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace durable::fault {

struct FlowInput {
  int steps = 5;
  int sleep_ms = 0;  // each activity body sleeps this long (a window for faults to land in)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FlowInput, steps, sleep_ms)

struct StepInput {
  std::string workflow_id;
  int step = 0;
  int sleep_ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepInput, workflow_id, step, sleep_ms)

// Logs (workflow, step, attempt, pid) in a transaction of its own, then performs the side
// effect: an insert into fault_effects keyed by (workflow, step). Returns who did it.
struct FaultStep {
  static constexpr auto name = "fault_step";
  static ActivityOptions options();
  std::string url, schema;
  Json operator()(ActivityContext& ctx, const StepInput& in) const;
};

struct FaultFlow {
  static constexpr auto name = "fault_flow";
  int operator()(WorkflowContext& ctx, const FlowInput& in);
};

// The transactional twin of FaultStep: logs its execution the same way, then inserts its effect
// into fault_tx_effects, which has no unique key, in the transaction its result commits in: a
// step committed twice, or an effect committed without its step, shows as a row too many.
struct TxFaultStep {
  static constexpr auto name = "fault_tx_step";
  static ActivityOptions options() { return FaultStep::options(); }
  std::string url, schema;
  Json operator()(TransactionContext& ctx, const StepInput& in) const;
};

// FaultFlow with transactional steps.
struct TxFaultFlow {
  static constexpr auto name = "fault_tx_flow";
  int operator()(WorkflowContext& ctx, const FlowInput& in);
};

// Crashes its process (abort()) on every attempt, after logging the execution.
struct CrashStep {
  static constexpr auto name = "crash_step";
  static ActivityOptions options();
  std::string url, schema;
  int operator()(ActivityContext& ctx, const StepInput& in) const;
};

struct CrashFlow {
  static constexpr auto name = "crash_flow";
  int operator()(WorkflowContext& ctx, const int& unused);
};

// Engine options for the workload: short leases so a dead worker's work is taken over quickly.
EngineOptions workload_options(const std::string& url, const std::string& schema, const std::string& instance);
void register_workload(Engine& engine, const std::string& url, const std::string& schema);
// Creates the schema (migrated) and the workload's own tables in it.
void create_workload_tables(const std::string& url, const std::string& schema);
// Starts `count` workflows `<prefix><first>` .. (FaultFlow, or TxFaultFlow); returns how many starts were accepted.
int start_workflows(Engine& engine, const std::string& prefix, int count, const FlowInput& input, int first = 0,
                    bool transactional = false);

// What the checker found. `ok()` is the guarantee; the rest are figures to report.
struct Check {
  std::int64_t workflows = 0;             // accepted starts
  std::int64_t not_completed = 0;         // not in a terminal state, or failed
  std::int64_t steps_completed = 0;       // activity_completed events
  std::int64_t duplicate_commits = 0;     // a (workflow, step) with more than one completion event
  std::int64_t missing_effects = 0;       // a completed step with no effect row
  std::int64_t stray_effects = 0;         // an effect row for a step that did not complete
  std::int64_t duplicate_effects = 0;     // effect rows beyond one per step (transactional steps)
  std::int64_t journal_gaps = 0;          // workflows whose seqs are not 0..next_seq-1
  std::int64_t replay_failures = 0;       // journals that do not replay to completion cleanly
  std::int64_t leased_tasks = 0;          // tasks still running under a lease
  std::int64_t executions = 0;            // activity bodies started (execution log)
  std::int64_t duplicate_executions = 0;  // executions beyond the first per (workflow, step): at least once
  bool ok() const {
    return not_completed == 0 && duplicate_commits == 0 && missing_effects == 0 && stray_effects == 0 &&
           duplicate_effects == 0 && journal_gaps == 0 && replay_failures == 0 && leased_tasks == 0;
  }
  Json to_json() const;
};
Check check(const std::string& url, const std::string& schema, const std::string& prefix);

// Waits until every workflow under `prefix` has ended, or `limit` passes; returns whether they did.
bool wait_all_ended(const std::string& url, const std::string& schema, const std::string& prefix,
                    std::chrono::seconds limit);

// Prints one JSON line (`FAULT {...}`) and a readable table of the figures, and appends the
// JSON line to $DURABLE_FAULT_REPORT when set.
void report(const std::string& fault, const Json& figures);

// Scale: the short CI version unless DURABLE_FAULT_FULL=1 asks for the full one.
bool full_run();

}  // namespace durable::fault
