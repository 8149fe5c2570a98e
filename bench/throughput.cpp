// Throughput: chain runs served by 1 or 3 engine processes, started queued first or while running.
#include <fmt/format.h>

#include <future>
#include <optional>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"
#include "pg_cost.hpp"

namespace bench {

namespace {

// Starts `count` chain runs named PREFIX-i from as many threads as the client has connections,
// so one client's commit latency does not cap the rate at which work reaches the engines.
std::vector<ChainHandle> start_runs(durable::Engine& client, const std::string& prefix, int count, int steps,
                                    const std::string& workflow) {
  const int threads = client.options().connection_pool_size;
  std::vector<std::future<std::vector<ChainHandle>>> parts;
  for (int t = 0; t < threads; ++t) {
    parts.push_back(std::async(std::launch::async, [&, t] {
      std::vector<ChainHandle> mine;
      for (int i = t; i < count; i += threads) {
        mine.emplace_back(client.start_workflow(workflow, fmt::format("{}-{}", prefix, i), steps));
      }
      return mine;
    }));
  }
  std::vector<ChainHandle> runs;
  for (auto& part : parts) {
    for (auto& run : part.get()) runs.push_back(std::move(run));
  }
  return runs;
}

// The client hears of each end in the worker processes from their NOTIFY (its engine LISTENs
// from its first wait on), so the last result is noticed as soon as it is committed.
void wait_for_all(const std::vector<ChainHandle>& runs, int steps) {
  for (const auto& run : runs) check_sum(run.result(result_timeout), steps);
}

}  // namespace

const char* starts_text(Starts starts) { return starts == Starts::queued_first ? "queued first" : "while running"; }

Result run_throughput(const std::string& url, const std::string& schema, int steps, int processes, int workflows,
                      Starts starts, const std::string& id_prefix, const std::string& workflow) {
  std::optional<WorkerProcesses> workers;  // declared first: stopped after the client is gone
  durable::Engine client(engine_options(url, schema));
  register_definitions(client);  // start_workflow checks the input against the registered type
  std::vector<ChainHandle> runs;
  if (starts == Starts::queued_first) {
    runs = start_runs(client, id_prefix + "run", workflows, steps,
                      workflow);  // they wait in the tables: no engine runs yet
  } else {
    workers.emplace(url, schema, processes);
    // Untimed warm-up: connections opened and statements prepared in the client and the workers.
    wait_for_all(start_runs(client, id_prefix + "warm-up", 2 * processes, steps, workflow), steps);
  }

  PgCostProbe cost(url);
  const auto start = Clock::now();
  if (starts == Starts::queued_first) {
    workers.emplace(url, schema, processes);
  } else {
    runs = start_runs(client, id_prefix + "run", workflows, steps, workflow);
  }
  // How long the engines took to come up, or the client to start every run: shows whether that was the bottleneck.
  const double start_seconds = seconds_since(start);
  wait_for_all(runs, steps);
  const double seconds = seconds_since(start);

  Result result = {{"bench", "throughput"},
                   {"workflow", workflow},
                   {"steps", steps},
                   {"processes", processes},
                   {"starts", starts == Starts::queued_first ? "queued_first" : "while_running"},
                   {"workflows", workflows},
                   {"seconds", seconds},
                   {"start_seconds", start_seconds},
                   {"workflows_per_s", workflows / seconds},
                   {"steps_per_s", workflows * steps / seconds}};
  add_pg_cost(result, cost.per(workflows * steps), "step");
  return result;
}

Result measure_throughput(const std::string& url, int steps, int processes, int workflows, Starts starts) {
  progress("throughput: {} x {}-step workflows on {}, runs started {}", workflows, steps, processes_text(processes),
           starts_text(starts));
  ScratchSchema schema(url);
  return run_throughput(url, schema.name(), steps, processes, workflows, starts);
}

void compare_to_raw_queue(Result& result, std::optional<double> raw_jobs_per_s) {
  if (!raw_jobs_per_s) return;
  result["workflows_ratio_to_raw_queue"] = result["workflows_per_s"].get<double>() / *raw_jobs_per_s;
  result["ratio_to_raw_queue"] = result["steps_per_s"].get<double>() / *raw_jobs_per_s;
}

void set_raw_queue_aim(Result& result) {
  if (!result.contains("ratio_to_raw_queue")) return;
  result["aim_ratio_to_raw_queue"] = aim_ratio_to_raw_queue;
  result["aim_met"] = result["ratio_to_raw_queue"].get<double>() >= aim_ratio_to_raw_queue;
}

}  // namespace bench
