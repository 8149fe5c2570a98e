// durable-bench: durable against a hand-written job queue on the same PostgreSQL, then its
// throughput, latency (idle and under load), throughput with big tables, replay cost, the WAL
// and write transactions it costs PostgreSQL per step, and the management API with a million
// runs in the tables.
//
//   durable-bench [--scale F] [--only raw_queue|throughput|latency|scaling|replay|runs|messages|children|continue|
//                                     transactional|codec]
//
// codec is measured only in a build that found libsodium (its SodiumCodec is the example's).
//
// The database is durable::testing::database_url(): $DURABLE_DATABASE_URL, or a throwaway
// cluster. Every measurement works in a fresh schema and drops it afterwards. Results go to
// stdout as one JSON line per measurement, then a table with the aims; progress goes to stderr.
//
// The raw queue runs first: engine throughput is reported as a ratio to its jobs/s, so
// `--only throughput` runs it too.
//
// The throughput, scaling and runs measurements re-execute this program as `durable-bench worker
// SCHEMA`: an engine process that serves the benchmark definitions until SIGTERM.
//
// This file: the command line, the order of the measurements and the table. Each measurement
// is a file of its own (measurements.hpp); what they share is in support.hpp, pg_cost.hpp and
// bench_workflows.hpp.
#include <durable/testing.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"
#include "support/serve.hpp"

namespace bench {

namespace {

// ---- Command line ------------------------------------------------------------------------------

// A bad command line: main prints the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double parse_scale(const std::string& text) {
  std::size_t used = 0;
  double scale = 0;
  try {
    scale = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(scale > 0)) throw UsageError(fmt::format("--scale takes a number > 0, not '{}'", text));
  return scale;
}

const std::vector<std::string> measurement_names = {"raw_queue", "throughput",    "latency",  "scaling",
                                                    "replay",    "runs",          "messages", "children",
                                                    "continue",  "transactional", "codec"};

struct Config {
  double scale = 1.0;  // multiplies every workflow, job and loaded row count (not the 1000 steps of the long run)
  std::string only{};  // empty: all measurements
  int scaled(int count) const { return std::max(1, static_cast<int>(std::lround(count * scale))); }
  bool wants(const std::string& name) const { return only.empty() || only == name; }
};

Config parse_args(const std::vector<std::string>& args) {
  Config config;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "--scale" || args[i] == "--only") && i + 1 == args.size()) {
      throw UsageError(fmt::format("{} needs a value", args[i]));
    }
    if (args[i] == "--scale") {
      config.scale = parse_scale(args[++i]);
    } else if (args[i] == "--only") {
      config.only = args[++i];
      if (std::find(measurement_names.begin(), measurement_names.end(), config.only) == measurement_names.end()) {
        throw UsageError(fmt::format("--only takes one of {}", fmt::join(measurement_names, ", ")));
      }
    } else {
      throw UsageError(fmt::format("unknown argument '{}'", args[i]));
    }
  }
  return config;
}

// ---- The report --------------------------------------------------------------------------------

const char* verdict(const Result& result) { return result["aim_met"].get<bool>() ? "met" : "NOT met"; }

// "0.42x", or "-" when the result has no such ratio (its reference was not measured).
std::string ratio_text(const Result& result, const char* field) {
  return result.contains(field) ? fmt::format("{:.2f}x", result[field].get<double>()) : "-";
}

std::vector<Result> of_kind(const std::vector<Result>& results, const char* bench) {
  std::vector<Result> out;
  std::copy_if(results.begin(), results.end(), std::back_inserter(out),
               [&](const Result& r) { return r["bench"] == bench; });
  return out;
}

std::string cpu_text(const Result& r, const std::string& key) {
  return r.contains(key) && r[key].is_number() ? fmt::format("{:.0f}", r[key].get<double>()) : std::string("-");
}

void print_raw_queue(const Result& r) {
  fmt::print(
      "\nraw queue (the limit): {} jobs, {} workers, {:.2f} s: {:.1f} jobs/s, {:.0f} WAL bytes/job, "
      "{:.2f} write xacts/job, {} us of PostgreSQL CPU/job\n",
      r["jobs"].get<int>(), r["workers"].get<int>(), r["seconds"].get<double>(), r["jobs_per_s"].get<double>(),
      r["wal_bytes_per_job"].get<double>(), r["write_xacts_per_job"].get<double>(), cpu_text(r, "pg_cpu_us_per_job"));
}

// Throughput figures shared by the throughput and scaling tables.
constexpr auto throughput_header = "{:>9} {:>8} {:>11} {:>8} {:>7} {:>9} {:>10} {:>10} {:>12}";
std::string throughput_columns(const Result& r) {
  return fmt::format("{:>9} {:>8.2f} {:>11.1f} {:>8.1f} {:>7} {:>9} {:>10.0f} {:>10.2f} {:>12}",
                     r["workflows"].get<int>(), r["seconds"].get<double>(), r["workflows_per_s"].get<double>(),
                     r["steps_per_s"].get<double>(), ratio_text(r, "workflows_ratio_to_raw_queue"),
                     ratio_text(r, "ratio_to_raw_queue"), r["wal_bytes_per_step"].get<double>(),
                     r["write_xacts_per_step"].get<double>(), cpu_text(r, "pg_cpu_us_per_step"));
}
std::string throughput_titles() {
  return fmt::format(fmt::runtime(throughput_header), "workflows", "seconds", "workflows/s", "steps/s", "wf/raw",
                     "steps/raw", "WAL B/step", "xacts/step", "PG CPU us/st");
}

void print_throughput(const std::vector<Result>& rows) {
  if (rows.empty()) return;
  fmt::print("\n{:<11} {:>5} {:>9} {:>13} {}\n", "throughput", "steps", "processes", "runs started",
             throughput_titles());
  for (const auto& r : rows) {
    const bool queued_first = r["starts"] == "queued_first";
    fmt::print("{:<11} {:>5} {:>9} {:>13} {}\n", "", r["steps"].get<int>(), r["processes"].get<int>(),
               starts_text(queued_first ? Starts::queued_first : Starts::while_running), throughput_columns(r));
  }
}

void print_latency(const Result& r, const std::string& title) {
  fmt::print("\n{}: {} runs, p50 {:.1f} ms, p99 {:.1f} ms, mean {:.1f} ms, max {:.1f} ms\n", title,
             r["runs"].get<int>(), r["p50_ms"].get<double>(), r["p99_ms"].get<double>(), r["mean_ms"].get<double>(),
             r["max_ms"].get<double>());
}

void print_scaling(const std::vector<Result>& rows) {
  if (rows.empty()) return;
  fmt::print("\n{:<21} {:>7} {:>7} {:>8} {}\n", "scaling (10-step, 1p)", "rows", "load s", "vs empty",
             throughput_titles());
  for (const auto& r : rows) {
    fmt::print("{:<21} {:>7} {:>7.1f} {:>8} {}\n", r["state"].get<std::string>(), r["rows"].get<int>(),
               r["load_seconds"].get<double>(), ratio_text(r, "ratio_to_empty"), throughput_columns(r));
  }
}

void print_replay(const Result& r) {
  fmt::print(
      "\nreplay cost: {}-step runs {:.2f} ms/step ({} runs), {}-step run {:.2f} ms/step ({:.1f} s), "
      "ratio {:.2f}\n",
      r["short_steps"].get<int>(), r["short_ms_per_step"].get<double>(), r["short_runs"].get<int>(),
      r["long_steps"].get<int>(), r["long_ms_per_step"].get<double>(), r["long_seconds"].get<double>(),
      r["ratio"].get<double>());
}

// "4800 workflows in 12 runs" during the prune (runs one after another), "400 workflows" alone.
std::string workflows_text(const Result& r) {
  const int workflows = r["workflows"].get<int>();
  return r.contains("runs") ? fmt::format("{} workflows in {} runs", workflows, r["runs"].get<int>())
                            : fmt::format("{} workflows", workflows);
}

// ", 0.84x of alone" for the throughput during the prune, "" for the one alone.
std::string during_prune_text(const Result& r) {
  if (!r.contains("ratio_to_alone")) return "";
  const bool overlapped = r["prune_outlasted_throughput"].get<bool>();
  return fmt::format(", {} of alone{}", ratio_text(r, "ratio_to_alone"),
                     overlapped ? "" : " (the prune ended first: not a full overlap)");
}

// The runs measurement: its load, then one line per figure.
void print_runs(const std::vector<Result>& rows) {
  for (const auto& r : rows) {
    const std::string what = r["what"], label = r["label"];
    if (what == "load") {
      fmt::print("\nruns ({} ended, {} running, one {}-step run; loaded in {:.1f} s); engine not started\n",
                 r["ended_runs"].get<int>(), r["running_runs"].get<int>(), r["long_run_steps"].get<int>(),
                 r["load_seconds"].get<double>());
    } else if (r.contains("median_ms")) {
      fmt::print("  {:<58} median {:>7.2f} ms, max {:>7.2f} ms\n", label, r["median_ms"].get<double>(),
                 r["max_ms"].get<double>());
    } else if (what == "prune") {
      fmt::print("  {:<58} {} runs in {} batches, {:.1f} s: {:.0f} runs/s\n", label, r["runs"].get<long long>(),
                 r["batches"].get<int>(), r["seconds"].get<double>(), r["runs_per_s"].get<double>());
    } else {
      fmt::print("  {:<58} {}, {:.2f} s: {:.1f} steps/s{}\n", label, workflows_text(r), r["seconds"].get<double>(),
                 r["steps_per_s"].get<double>(), during_prune_text(r));
    }
  }
}

// An aim of the runs measurement: a time in ms, runs/s, or steps/s against the same run alone.
std::array<std::string, 4> runs_aim(const Result& r) {
  const std::string label = "runs: " + r["label"].get<std::string>();
  if (r.contains("aim_ms")) {
    return {fmt::format("{}, median", label), fmt::format("{:.1f} ms", r["median_ms"].get<double>()),
            fmt::format("< {:.0f} ms", r["aim_ms"].get<double>())};
  }
  if (r.contains("aim_runs_per_s")) {
    return {label + ", runs/s", fmt::format("{:.0f}", r["runs_per_s"].get<double>()),
            fmt::format(">= {:.0f}", r["aim_runs_per_s"].get<double>())};
  }
  return {label + ", steps/s vs alone", ratio_text(r, "ratio_to_alone"),
          fmt::format(">= {:.1f}x", r["aim_ratio_to_alone"].get<double>())};
}

// One line per result that carries an aim: what, the figure, the aim, met or NOT met.
void print_aims(const std::vector<Result>& results) {
  std::vector<std::array<std::string, 4>> lines;
  for (const auto& r : results) {
    if (!r.contains("aim_met")) continue;
    const std::string bench = r["bench"];
    if (bench == "throughput") {
      lines.push_back({fmt::format("{}-step steps/s vs raw queue jobs/s, {}, queued first", r["steps"].get<int>(),
                                   processes_text(r["processes"].get<int>())),
                       ratio_text(r, "ratio_to_raw_queue"), fmt::format(">= {:.1f}x", aim_ratio_to_raw_queue)});
    } else if (bench == "latency") {
      lines.push_back({"idle start-to-result p50, 1-step workflow", fmt::format("{:.1f} ms", r["p50_ms"].get<double>()),
                       fmt::format("< {:.0f} ms", aim_p50_ms)});
    } else if (bench == "scaling") {
      lines.push_back({fmt::format("10-step steps/s with {} vs empty", r["state"].get<std::string>()),
                       ratio_text(r, "ratio_to_empty"), fmt::format(">= {:.1f}x", aim_ratio_to_empty)});
    } else if (bench == "replay") {
      lines.push_back({"per-step time, 1000-step vs 10-step workflow", ratio_text(r, "ratio"),
                       fmt::format("<= {:.1f}x", aim_replay_ratio)});
    } else if (bench == "runs") {
      lines.push_back(runs_aim(r));
    } else if (bench == "transactional") {
      lines.push_back({"steps/s, 10-step workflows of inserts in transactional steps vs no-ops", ratio_text(r, "ratio"),
                       fmt::format(">= {:.1f}x", aim_transactional_ratio)});
    } else if (bench == "codec") {
      lines.push_back({"steps/s, 10-step no-op workflows with the SodiumCodec vs no codec", ratio_text(r, "ratio"),
                       fmt::format(">= {:.1f}x", aim_codec_ratio)});
    } else if (bench == "children") {
      lines.push_back(
          {fmt::format("children/s vs top-level runs/s, {} children of one parent", r["fan_out"].get<int>()),
           ratio_text(r, "ratio"), fmt::format(">= {:.1f}x", aim_children_ratio)});
    } else if (bench == "continue") {
      lines.push_back({"per-step time, 10,000 vs 1,000 steps continuing as new every 100", ratio_text(r, "ratio"),
                       fmt::format("<= {:.1f}x", aim_continue_ratio)});
    } else if (bench == "send_to_receive") {
      lines.push_back({"idle send-to-receive p50, receiver in another process",
                       fmt::format("{:.1f} ms", r["p50_ms"].get<double>()),
                       fmt::format("< {:.0f} ms", aim_send_to_receive_p50_ms)});
    }
    lines.back()[3] = verdict(r);
  }
  if (lines.empty()) return;
  fmt::print("\n{:<70} {:>8} {:>8}  {}\n", "aim", "result", "target", "verdict");
  for (const auto& [what, figure, aim, met] : lines) fmt::print("{:<70} {:>8} {:>8}  {}\n", what, figure, aim, met);
}

void print_table(const std::vector<Result>& results) {
  for (const auto& r : of_kind(results, "raw_queue")) print_raw_queue(r);
  print_throughput(of_kind(results, "throughput"));
  for (const auto& r : of_kind(results, "latency")) print_latency(r, "idle latency, 1-step workflow");
  for (const auto& r : of_kind(results, "latency_under_load")) {
    print_latency(r, fmt::format("latency under load ({} x {}-step in flight, {:.0f} steps/s), 1-step workflow",
                                 r["load_in_flight"].get<int>(), r["load_steps"].get<int>(),
                                 r["load_steps_per_s"].get<double>()));
  }
  print_scaling(of_kind(results, "scaling"));
  for (const auto& r : of_kind(results, "replay")) print_replay(r);
  print_runs(of_kind(results, "runs"));
  for (const auto& r : of_kind(results, "send_to_receive")) {
    fmt::print(
        "\nsend to receive, idle, receiver in another process: {} messages, p50 {:.1f} ms, p99 {:.1f} ms, "
        "max {:.1f} ms\n",
        r["messages"].get<int>(), r["p50_ms"].get<double>(), r["p99_ms"].get<double>(), r["max_ms"].get<double>());
  }
  for (const auto& r : of_kind(results, "children")) {
    fmt::print("\nchildren: {} rounds of {}: {:.0f} children/s, {:.0f} top-level 1-step runs/s\n",
               r["rounds"].get<int>(), r["fan_out"].get<int>(), r["children_per_s"].get<double>(),
               r["top_level_runs_per_s"].get<double>());
  }
  for (const auto& r : of_kind(results, "continue")) {
    fmt::print("\ncontinue-as-new every {} steps: {:.2f} ms/step over {} steps, {:.2f} ms/step over {} steps\n",
               r["every"].get<int>(), r["short_ms_per_step"].get<double>(), r["short_steps"].get<int>(),
               r["long_ms_per_step"].get<double>(), r["long_steps"].get<int>());
  }
  for (const auto& r : of_kind(results, "transactional")) {
    fmt::print(
        "\ntransactional steps: {} x {}-step workflows, {} rounds: {:.0f} steps/s inserting in the step's transaction, "
        "{:.0f} no-op steps/s, {:.0f} steps/s inserting on their own connections (PostgreSQL CPU per step {} / {} / "
        "{} us)\n",
        r["workflows"].get<int>(), r["steps"].get<int>(), r["rounds"].get<int>(), r["insert_steps_per_s"].get<double>(),
        r["noop_steps_per_s"].get<double>(), r["plain_insert_steps_per_s"].get<double>(),
        r["insert_pg_cpu_us_per_step"].dump(), r["noop_pg_cpu_us_per_step"].dump(),
        r["plain_insert_pg_cpu_us_per_step"].dump());
  }
  for (const auto& r : of_kind(results, "codec")) {
    fmt::print(
        "\ncodec: {} x {}-step no-op workflows, {} rounds: {:.0f} steps/s without a codec, {:.0f} with the SodiumCodec "
        "(WAL per step {} / {} B, PostgreSQL CPU per step {} / {} us)\n",
        r["workflows"].get<int>(), r["steps"].get<int>(), r["rounds"].get<int>(), r["plain_steps_per_s"].get<double>(),
        r["sodium_steps_per_s"].get<double>(), cpu_text(r, "plain_wal_bytes_per_step"),
        cpu_text(r, "sodium_wal_bytes_per_step"), cpu_text(r, "plain_pg_cpu_us_per_step"),
        cpu_text(r, "sodium_pg_cpu_us_per_step"));
  }
  print_aims(results);
  std::fflush(stdout);
}

// ---- Running it all ----------------------------------------------------------------------------

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

std::vector<TableState> scaling_states(const Config& config) {
  const int queued = config.scaled(queued_tasks), completed = config.scaled(completed_workflows);
  return {
      {"empty", "empty tables", 0},
      {"queued_tasks", fmt::format("{} activity tasks queued for another service", queued), queued, queued_tasks_sql()},
      {"completed_workflows", fmt::format("{} completed workflows", completed), completed, completed_workflows_sql()}};
}

int run_benchmarks(const Config& config) {
  const std::string& url = durable::testing::database_url();
  std::vector<Result> results;
  auto report = [&](Result result) {
    fmt::print("{}\n", result.dump());
    std::fflush(stdout);
    results.push_back(std::move(result));
  };

  std::optional<double> raw_jobs_per_s;
  if (config.wants("raw_queue") || config.wants("throughput")) {
    Result raw = measure_raw_queue(url, config.scaled(raw_queue_jobs));
    raw_jobs_per_s = raw["jobs_per_s"].get<double>();
    report(std::move(raw));
  }
  if (config.wants("throughput")) {
    for (const auto& [steps, workflows] : {std::pair{1, one_step_workflows}, std::pair{10, ten_step_workflows}}) {
      for (int processes : {1, 3}) {
        for (Starts starts : {Starts::queued_first, Starts::while_running}) {
          Result r = measure_throughput(url, steps, processes, config.scaled(workflows), starts);
          compare_to_raw_queue(r, raw_jobs_per_s);
          // The aim compares like with like: the raw queue's jobs are queued before its clock starts.
          if (steps == 10 && starts == Starts::queued_first) set_raw_queue_aim(r);
          report(std::move(r));
        }
      }
    }
  }
  if (config.wants("latency")) {
    report(measure_idle_latency(url, config.scaled(latency_runs)));
    report(measure_loaded_latency(url, config.scaled(latency_runs)));
  }
  if (config.wants("scaling")) {
    std::optional<double> empty_steps_per_s;  // the first state is the empty one
    for (const auto& state : scaling_states(config)) {
      Result r = measure_scaling(url, state, config.scaled(ten_step_workflows));
      compare_to_raw_queue(r, raw_jobs_per_s);
      if (empty_steps_per_s) {
        compare_to_empty(r, *empty_steps_per_s);
      } else {
        empty_steps_per_s = r["steps_per_s"].get<double>();
      }
      report(std::move(r));
    }
  }
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
  if (config.wants("runs")) {
    measure_runs(url, {config.scaled(ended_runs), config.scaled(running_runs), config.scaled(ten_step_workflows)},
                 report);
  }
  print_table(results);
  return 0;
}

}  // namespace

}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "worker") {
      // How WorkerProcesses starts engines: serve the benchmark definitions until SIGTERM.
      return durable::test::serve_until_stopped(engine_options(durable::testing::database_url(), args[1]),
                                                register_definitions, "durable-bench");
    }
    return run_benchmarks(parse_args(args));
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}\nusage: durable-bench [--scale F] [--only {}]\n", e.what(),
               fmt::join(measurement_names, "|"));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "durable-bench failed: {}\n", e.what());
    return 1;
  }
}
