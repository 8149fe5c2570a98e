// Replay cost: per-step time of a 1000-step run against 10-step ones (each step replays the
// workflow from the top).
#include <fmt/format.h>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

Result measure_replay(const std::string& url, int short_runs) {
  constexpr int short_steps = 10;
  constexpr int long_steps = 1000;
  progress("replay: {} x {}-step workflows, then one {}-step workflow", short_runs, short_steps, long_steps);
  StartedEngine started(url);
  durable::Engine& engine = started.engine;
  run_chain(engine, "warm-up", short_steps);

  auto start = Clock::now();
  for (int i = 0; i < short_runs; ++i) run_chain(engine, fmt::format("short-{}", i), short_steps);
  const double short_ms = seconds_since(start) * 1000.0 / (short_runs * short_steps);

  start = Clock::now();
  run_chain(engine, "long", long_steps);
  const double long_seconds = seconds_since(start);
  const double long_ms = long_seconds * 1000.0 / long_steps;

  const double ratio = long_ms / short_ms;
  return {{"bench", "replay"},
          {"short_steps", short_steps},
          {"short_runs", short_runs},
          {"short_ms_per_step", short_ms},
          {"long_steps", long_steps},
          {"long_seconds", long_seconds},
          {"long_ms_per_step", long_ms},
          {"ratio", ratio},
          {"aim_ratio", aim_replay_ratio},
          {"aim_met", ratio <= aim_replay_ratio}};
}

}  // namespace bench
