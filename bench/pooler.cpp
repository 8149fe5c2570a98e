// Behind PgBouncer: an engine through a PgBouncer in transaction mode beside one connected
// directly, in turns on the same PostgreSQL.
#include <fmt/format.h>
#include <durable/testing.hpp>

#include <map>
#include <numeric>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

namespace {

constexpr int pooler_chain_steps = 10;

// Steps/s of `workflows` ten-step runs started at once on a running engine, to the last result.
double turn_steps_per_s(durable::Engine& engine, int workflows, int turn) {
  const auto start = Clock::now();
  std::vector<ChainHandle> runs;
  runs.reserve(static_cast<std::size_t>(workflows));
  for (int i = 0; i < workflows; ++i) {
    runs.push_back(engine.start_workflow<NoopChain>(fmt::format("flow-{}-{}", turn, i), pooler_chain_steps));
  }
  for (auto& run : runs) check_sum(run.result(result_timeout), pooler_chain_steps);
  return workflows * pooler_chain_steps / seconds_since(start);
}

double mean_of_turns(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace

Result measure_pooler(const std::string& url, int latency_runs, int workflows) {
  progress("pooler: {} idle 1-step runs and {} x {}-step runs, through PgBouncer and directly, in turns", latency_runs,
           workflows, pooler_chain_steps);
  // JIT off as docs/operations.md says (Behind PgBouncer): the engine cannot turn it off itself there.
  durable::testing::TemporaryPgBouncer::Options options;
  options.connect_query = "SET jit = off";
  const durable::testing::TemporaryPgBouncer pooler(url, options);
  std::map<std::string, std::vector<double>> p50_ms, p99_ms, throughput;
  for (int turn = 0; turn < 4; ++turn) {
    const bool pooled = turn % 2 == 1;
    const std::string way = pooled ? "pooled" : "direct";
    StartedEngine started(url, [&](durable::EngineOptions& o) {
      if (!pooled) return;
      o.database_url = pooler.url();
      o.pooler_mode = true;
      o.listen_url = url;
    });
    Result latency;
    add_latency_figures(latency, time_one_step_runs(started.engine, latency_runs));
    p50_ms[way].push_back(latency["p50_ms"].get<double>());
    p99_ms[way].push_back(latency["p99_ms"].get<double>());
    throughput[way].push_back(turn_steps_per_s(started.engine, workflows, turn));
  }
  Result result = {
      {"bench", "pooler"}, {"latency_runs", latency_runs}, {"workflows", workflows}, {"steps", pooler_chain_steps}};
  for (const char* way : {"direct", "pooled"}) {
    result[fmt::format("{}_p50_ms", way)] = mean_of_turns(p50_ms[way]);
    result[fmt::format("{}_p99_ms", way)] = mean_of_turns(p99_ms[way]);
    result[fmt::format("{}_steps_per_s", way)] = mean_of_turns(throughput[way]);
  }
  result["pooled_to_direct_steps_per_s"] =
      result["pooled_steps_per_s"].get<double>() / result["direct_steps_per_s"].get<double>();
  return result;
}

}  // namespace bench
