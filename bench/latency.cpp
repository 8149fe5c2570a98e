// Latency: start-to-result time of 1-step runs on an in-process engine, idle and under load.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

using namespace std::chrono_literals;

namespace {

// Keeps `in_flight` chain runs of `steps` steps going on an engine, from a thread of its own,
// until stopped: whenever the oldest ends, another starts.
class BackgroundLoad {
 public:
  BackgroundLoad(durable::Engine& engine, int in_flight, int steps)
      : thread_(std::async(std::launch::async, [this, &engine, in_flight, steps] { run(engine, in_flight, steps); })) {}
  ~BackgroundLoad() { stop_ = true; }  // the future's destructor waits for the thread
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;

  int ended() const { return ended_; }

  // Waits until `count` runs have ended (the load has reached its steady state).
  void wait_until_ended(int count) {
    while (ended_ < count) {
      if (thread_.wait_for(10ms) == std::future_status::ready) {
        thread_.get();  // rethrows why the load failed
        throw std::runtime_error("the background load stopped early");
      }
    }
  }

  // Stops the load, leaving its last runs unfinished; rethrows a failure of the load.
  void stop() {
    stop_ = true;
    thread_.get();
  }

 private:
  void run(durable::Engine& engine, int in_flight, int steps) {
    std::deque<ChainHandle> running;
    for (int started = 0; !stop_;) {
      while (static_cast<int>(running.size()) < in_flight) {
        running.push_back(engine.start_workflow<NoopChain>(fmt::format("load-{}", started++), steps));
      }
      check_sum(running.front().result(result_timeout), steps);
      running.pop_front();
      ++ended_;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> ended_{0};
  std::future<void> thread_;  // declared last: the thread starts once the counters exist
};

}  // namespace

std::vector<double> time_one_step_runs(durable::Engine& engine, int runs) {
  for (int i = 0; i < 5; ++i) run_chain(engine, fmt::format("warm-up-{}", i), 1);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    run_chain(engine, fmt::format("run-{}", i), 1);
    ms.push_back(seconds_since(start) * 1000.0);
  }
  return ms;
}

void add_latency_figures(Result& result, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  result["p50_ms"] = percentile(ms, 50);
  result["p99_ms"] = percentile(ms, 99);
  result["mean_ms"] = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  result["max_ms"] = ms.back();
}

Result measure_idle_latency(const std::string& url, int runs) {
  progress("latency: {} sequential 1-step workflows on an idle engine", runs);
  StartedEngine started(url);
  Result result = {{"bench", "latency"}, {"steps", 1}, {"runs", runs}};
  add_latency_figures(result, time_one_step_runs(started.engine, runs));
  result["aim_p50_ms"] = aim_p50_ms;
  result["aim_met"] = result["p50_ms"].get<double>() < aim_p50_ms;
  return result;
}

Result measure_loaded_latency(const std::string& url, int runs) {
  constexpr int in_flight = 20, load_steps = 10;
  progress("latency: {} sequential 1-step workflows while {} x {}-step workflows keep running", runs, in_flight,
           load_steps);
  StartedEngine started(url);
  BackgroundLoad load(started.engine, in_flight, load_steps);
  load.wait_until_ended(in_flight);

  const int ended_before = load.ended();
  const auto start = Clock::now();
  auto ms = time_one_step_runs(started.engine, runs);
  const double load_steps_per_s = (load.ended() - ended_before) * load_steps / seconds_since(start);
  load.stop();

  Result result = {{"bench", "latency_under_load"},
                   {"steps", 1},
                   {"runs", runs},
                   {"load_in_flight", in_flight},
                   {"load_steps", load_steps},
                   {"load_steps_per_s", load_steps_per_s}};
  add_latency_figures(result, std::move(ms));
  return result;
}

}  // namespace bench
