// Children: a parent starting `fan_out` children and awaiting all of them, against as many
// top-level runs started and awaited from outside, round by round, side by side on one engine.
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

Result measure_children(const std::string& url, int rounds, int fan_out) {
  progress("children: {} rounds of {} children of one parent, against {} top-level 1-step runs", rounds, fan_out,
           fan_out);
  StartedEngine in_process(url);
  durable::Engine& engine = in_process.engine;
  double top_level = 0, children = 0;  // seconds
  for (int round = 0; round < rounds; ++round) {
    // Alternating which goes first, so neither always meets the other's leftovers.
    auto run_top_level = [&] {
      const auto started = Clock::now();
      std::vector<ChainHandle> runs;
      for (int i = 0; i < fan_out; ++i) {
        runs.push_back(engine.start_workflow<NoopChain>(fmt::format("top-{}-{}", round, i), 1));
      }
      for (auto& run : runs) check_sum(run.result(result_timeout), 1);
      top_level += seconds_since(started);
    };
    auto run_children = [&] {
      const auto started = Clock::now();
      auto parent = engine.start_workflow<NoopFanOut>(fmt::format("parent-{}", round), fan_out);
      if (parent.result(result_timeout) != 0) throw std::runtime_error("the children's results were wrong");
      children += seconds_since(started);
    };
    if (round % 2 == 0) {
      run_top_level();
      run_children();
    } else {
      run_children();
      run_top_level();
    }
  }
  const double runs = static_cast<double>(rounds) * fan_out;
  const double top_per_s = runs / top_level, children_per_s = runs / children;
  Result result = {{"bench", "children"}, {"rounds", rounds}, {"fan_out", fan_out}};
  result["top_level_runs_per_s"] = top_per_s;
  result["children_per_s"] = children_per_s;
  result["ratio"] = children_per_s / top_per_s;
  result["aim_ratio"] = aim_children_ratio;
  result["aim_met"] = result["ratio"].get<double>() >= aim_children_ratio;
  return result;
}

}  // namespace bench
