#include "run_order.hpp"

#include <fmt/format.h>
#include <durable/testing.hpp>

#include <optional>
#include <string>
#include <utility>

#include "measurements.hpp"
#include "report.hpp"

namespace bench {
namespace {

// Counts at --scale 1: each timed run lasts several seconds (shorter ones are at the mercy of
// noise on a shared machine), and the whole suite takes about 12 minutes on 2 cores, most of it
// loading the million completed workflows (scaling) and the million ended runs (runs, about 5
// minutes with its prune).
constexpr int raw_queue_jobs = 10'000;
constexpr int one_step_workflows = 1000;
constexpr int ten_step_workflows = 400;  // also each scaling run, and each of the runs measurement
constexpr int latency_runs = 200;
constexpr int children_rounds = 10;  // of 100 children, and 100 top-level runs
constexpr int replay_short_runs = 20;
constexpr int queued_tasks = 100'000;
constexpr int completed_workflows = 1'000'000;
constexpr int ended_runs = 1'000'000;
constexpr int running_runs = 100'000;
constexpr int flow_backlog_runs = 100'000;  // one tenant's backlog; and the runs spread over keys
constexpr int flow_small_runs = 100;        // the other tenant's runs (not scaled)
constexpr int flow_keys = 1'000;            // not scaled

std::vector<TableState> scaling_states(const Config& config) {
  const int queued = config.scaled(queued_tasks), completed = config.scaled(completed_workflows);
  return {
      {"empty", "empty tables", 0},
      {"queued_tasks", fmt::format("{} activity tasks queued for another service", queued), queued, queued_tasks_sql()},
      {"completed_workflows", fmt::format("{} completed workflows", completed), completed, completed_workflows_sql()}};
}

// Prints each result as it comes and keeps it for the table.
class Results {
 public:
  void report(Result result) {
    print_result(result);
    all_.push_back(std::move(result));
  }
  std::vector<Result> take() { return std::move(all_); }

 private:
  std::vector<Result> all_;
};

// 1- and 10-step workflows on 1 and 3 engine processes, runs started queued first and while running.
void run_throughput_grid(const std::string& url, const Config& config, std::optional<double> raw_jobs_per_s,
                         Results& results) {
  for (const auto& [steps, workflows] : {std::pair{1, one_step_workflows}, std::pair{10, ten_step_workflows}}) {
    for (int processes : {1, 3}) {
      for (Starts starts : {Starts::queued_first, Starts::while_running}) {
        Result r = measure_throughput(url, steps, processes, config.scaled(workflows), starts);
        compare_to_raw_queue(r, raw_jobs_per_s);
        // The aim compares like with like: the raw queue's jobs are queued before its clock starts.
        if (steps == 10 && starts == Starts::queued_first) set_raw_queue_aim(r);
        results.report(std::move(r));
      }
    }
  }
}

void run_scaling_states(const std::string& url, const Config& config, std::optional<double> raw_jobs_per_s,
                        Results& results) {
  std::optional<double> empty_steps_per_s;  // the first state is the empty one
  for (const auto& state : scaling_states(config)) {
    Result r = measure_scaling(url, state, config.scaled(ten_step_workflows));
    compare_to_raw_queue(r, raw_jobs_per_s);
    if (empty_steps_per_s) {
      compare_to_empty(r, *empty_steps_per_s);
    } else {
      empty_steps_per_s = r["steps_per_s"].get<double>();
    }
    results.report(std::move(r));
  }
}

}  // namespace

std::vector<Result> run_measurements(const Config& config) {
  const std::string& url = durable::testing::database_url();
  Results results;
  const auto report = [&results](Result result) { results.report(std::move(result)); };

  std::optional<double> raw_jobs_per_s;
  if (config.wants("raw_queue") || config.wants("throughput")) {
    Result raw = measure_raw_queue(url, config.scaled(raw_queue_jobs));
    raw_jobs_per_s = raw["jobs_per_s"].get<double>();
    report(std::move(raw));
  }
  if (config.wants("throughput")) run_throughput_grid(url, config, raw_jobs_per_s, results);
  if (config.wants("latency")) {
    report(measure_idle_latency(url, config.scaled(latency_runs)));
    report(measure_loaded_latency(url, config.scaled(latency_runs)));
  }
  if (config.wants("scaling")) run_scaling_states(url, config, raw_jobs_per_s, results);
  if (config.wants("replay")) report(measure_replay(url, config.scaled(replay_short_runs)));
  if (config.wants("messages")) report(measure_send_to_receive(url, config.scaled(latency_runs)));
  if (config.wants("children")) report(measure_children(url, config.scaled(children_rounds), 100));
  if (config.wants("continue")) report(measure_continue(url));
  if (config.wants("transactional")) report(measure_transactional(url, config.scaled(ten_step_workflows)));
  if (config.wants("codec")) {
#ifdef DURABLE_BENCH_SODIUM
    report(measure_codec(url, config.scaled(ten_step_workflows)));
#else
    progress("codec: not measured, this build did not find libsodium (Debian 12: libsodium-dev)");
#endif
  }
  if (config.wants("flow")) {
    report(measure_flow_neighbour(url, config.scaled(flow_backlog_runs), flow_small_runs));
    report(measure_flow_claim(url, config.scaled(flow_backlog_runs), flow_keys));
  }
  if (config.wants("pooler"))
    report(measure_pooler(url, config.scaled(latency_runs), config.scaled(ten_step_workflows)));
  if (config.wants("runs")) {
    measure_runs(url, {config.scaled(ended_runs), config.scaled(running_runs), config.scaled(ten_step_workflows)},
                 report);
  }
  return results.take();
}

}  // namespace bench
