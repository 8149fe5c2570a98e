// The benchmark's workflow, a chain of no-op activity calls, and the engines that run it.
#pragma once

#include <durable/durable.hpp>
#include <durable/pqxx.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "support.hpp"

namespace bench {

struct Noop {
  static constexpr auto name = "noop";
  int operator()(durable::ActivityContext&, const int& value) const { return value; }
};

// Calls activity A `steps` times in sequence with 0, 1, .. and sums the answers (so a run can be checked).
template <typename A>
int chain_of(durable::WorkflowContext& ctx, int steps) {
  int sum = 0;
  for (int i = 0; i < steps; ++i) sum += ctx.call<A>(i);
  return sum;
}

struct NoopChain {
  static constexpr auto name = "noop_chain";
  int operator()(durable::WorkflowContext& ctx, const int& steps) { return chain_of<Noop>(ctx, steps); }
};

// A transactional step: inserts one row into the schema's bench_rows table, in the transaction
// its result commits in (the table is made by create_bench_rows).
struct InsertOne {
  static constexpr auto name = "insert_one";
  std::string table;  // quoted schema.bench_rows
  int operator()(durable::TransactionContext& ctx, const int& value) const {
    ctx.transaction().exec_params0("INSERT INTO " + table + " (run, value) VALUES ($1, $2)", ctx.workflow_id().str(),
                                   value);
    return value;
  }
};

struct InsertChain {
  static constexpr auto name = "insert_chain";
  int operator()(durable::WorkflowContext& ctx, const int& steps) { return chain_of<InsertOne>(ctx, steps); }
};

// The same insert from an ordinary activity, committed on a connection of its own before the
// step's result is: what a service does without transactional activities (at least once).
struct InsertAlone {
  static constexpr auto name = "insert_alone";
  std::string url, table;
  int operator()(durable::ActivityContext& ctx, const int& value) const;
};

struct InsertAloneChain {
  static constexpr auto name = "insert_alone_chain";
  int operator()(durable::WorkflowContext& ctx, const int& steps) { return chain_of<InsertAlone>(ctx, steps); }
};

// Receives `count` messages of topic "ping", one after another, each waited for as long as it takes.
struct PingReceiver {
  static constexpr auto name = "ping_receiver";
  int operator()(durable::WorkflowContext& ctx, const int& count) {
    int sum = 0;
    for (int i = 0; i < count; ++i) sum += ctx.receive<int>("ping");
    return sum;
  }
};

// Starts `count` one-step NoopChain children at once, awaits them all and sums their results (0).
struct NoopFanOut {
  static constexpr auto name = "noop_fan_out";
  int operator()(durable::WorkflowContext& ctx, const int& count) {
    std::vector<durable::ChildFuture<int>> children;
    children.reserve(static_cast<std::size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) {
      children.push_back(ctx.start_child<NoopChain>(ctx.workflow_id().str() + "/" + std::to_string(i), 1));
    }
    int sum = 0;
    for (auto& child : children) sum += child.get();
    return sum;
  }
};

// Calls Noop `total` times in sequence, continuing as new every `every` calls; returns the sum.
struct LoopProgress {
  int done = 0;
  int total = 0;
  int every = 100;
  long long sum = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LoopProgress, done, total, every, sum)

struct NoopLoop {
  static constexpr auto name = "noop_loop";
  long long operator()(durable::WorkflowContext& ctx, LoopProgress p) {
    for (int i = 0; i < p.every && p.done < p.total; ++i) p.sum += ctx.call<Noop>(p.done++);
    if (p.done < p.total) ctx.continue_as_new(p);
    return p.sum;
  }
};

using ChainHandle = durable::WorkflowHandle<int>;

void register_definitions(durable::Engine& engine);
// The table InsertOne writes, in a migrated schema.
void create_bench_rows(const std::string& url, const std::string& schema);

// Default options but the schema, so every measurement runs what a user gets out of the box;
// and the SodiumCodec with the keys in this variable when it is set (the codec measurement).
durable::EngineOptions engine_options(const std::string& url, const std::string& schema);
inline constexpr auto codec_keys_env = "DURABLE_BENCH_CODEC_KEYS";

// Runs an engine on `schema` once, which creates the tables at the current schema version.
void migrate(const std::string& url, const std::string& schema);

// ---- Rows loaded by SQL (scaling.cpp, runs_scale.cpp) ----

// `sql` with its placeholders filled: {s} the schema, {rows} the row count, {workflow} and
// {activity} the names of NoopChain and Noop, {options} what the engine stores as a task's
// options (and an activity_scheduled event's) for a call with default ActivityOptions.
std::string loading_sql(const std::string& sql, const std::string& schema, int rows);

// The history every ended 1-step NoopChain run in the schema (status not running, next_seq 4)
// leaves behind, made from its workflows row: four journal events (started, activity scheduled
// and completed, then completed or failed as the run did) in three rows, one per commit, as the
// engine writes them; a completed task leaves no row. For loading_sql; run after the workflows rows.
std::vector<std::string> one_step_history_sql();

inline constexpr auto result_timeout = std::chrono::minutes{10};

// A wrong sum means the run is broken, not fast.
void check_sum(int sum, int steps);

// Starts a chain run and waits for its result.
void run_chain(durable::Engine& engine, const std::string& id, int steps);

// An in-process engine on a fresh schema, started: latency is judged where the result is
// noticed at once (no polling client between).
struct StartedEngine {
  // `adjust` changes the default options (engine_options) before the engine is made.
  explicit StartedEngine(const std::string& url, const std::function<void(durable::EngineOptions&)>& adjust = {});
  ScratchSchema schema;  // declared first: dropped after the engine has stopped
  durable::Engine engine;
};

}  // namespace bench
