// Continue-as-new: per-step time of a 10,000-step loop against a 1,000-step one, both continuing
// as new every 100 steps. Without it a run's every step replays the whole journal before it.
#include <fmt/format.h>

#include <stdexcept>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

Result measure_continue(const std::string& url) {
  constexpr int short_steps = 1'000, long_steps = 10'000, every = 100;
  progress("continue: loops of {} and {} steps, continuing as new every {}", short_steps, long_steps, every);
  StartedEngine in_process(url);
  durable::Engine& engine = in_process.engine;
  auto ms_per_step = [&](const std::string& id, int steps) {
    const auto started = Clock::now();
    auto run = engine.start_workflow<NoopLoop>(id, LoopProgress{0, steps, every, 0});
    const long long expected = static_cast<long long>(steps) * (steps - 1) / 2;
    if (durable::WorkflowHandle<long long>(run).result(result_timeout) != expected) {
      throw std::runtime_error("the loop's sum was wrong");
    }
    return seconds_since(started) * 1000.0 / steps;
  };
  ms_per_step("warm-up", every);
  const double short_ms = ms_per_step("short", short_steps);
  const double long_ms = ms_per_step("long", long_steps);
  const double ratio = long_ms / short_ms;
  return {{"bench", "continue"},
          {"every", every},
          {"short_steps", short_steps},
          {"short_ms_per_step", short_ms},
          {"long_steps", long_steps},
          {"long_ms_per_step", long_ms},
          {"ratio", ratio},
          {"aim_ratio", aim_continue_ratio},
          {"aim_met", ratio <= aim_continue_ratio}};
}

}  // namespace bench
