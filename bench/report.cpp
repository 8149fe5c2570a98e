#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <string>

#include "measurements.hpp"

namespace bench {
namespace {

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
    } else if (bench == "flow_noisy_neighbour") {
      lines.push_back({fmt::format("{} runs of a tenant behind another's {} on a queue, to alone",
                                   r["small_runs"].get<int>(), r["backlog_runs"].get<int>()),
                       ratio_text(r, "ratio"), fmt::format("<= {:.1f}x", aim_flow_neighbour_ratio)});
    } else if (bench == "flow_claim_cost") {
      lines.push_back(
          {fmt::format("steps/s, 1-step runs over {} keys of a queue vs default queue", r["keys"].get<int>()),
           ratio_text(r, "ratio"), fmt::format(">= {:.1f}x", aim_flow_claim_ratio)});
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

void print_send_to_receive(const Result& r) {
  fmt::print(
      "\nsend to receive, idle, receiver in another process: {} messages, p50 {:.1f} ms, p99 {:.1f} ms, "
      "max {:.1f} ms\n",
      r["messages"].get<int>(), r["p50_ms"].get<double>(), r["p99_ms"].get<double>(), r["max_ms"].get<double>());
}

void print_children(const Result& r) {
  fmt::print("\nchildren: {} rounds of {}: {:.0f} children/s, {:.0f} top-level 1-step runs/s\n", r["rounds"].get<int>(),
             r["fan_out"].get<int>(), r["children_per_s"].get<double>(), r["top_level_runs_per_s"].get<double>());
}

void print_continue(const Result& r) {
  fmt::print("\ncontinue-as-new every {} steps: {:.2f} ms/step over {} steps, {:.2f} ms/step over {} steps\n",
             r["every"].get<int>(), r["short_ms_per_step"].get<double>(), r["short_steps"].get<int>(),
             r["long_ms_per_step"].get<double>(), r["long_steps"].get<int>());
}

void print_pooler(const Result& r) {
  fmt::print(
      "\nbehind PgBouncer (transaction mode, pooler_mode) vs direct, in turns: idle 1-step p50 {:.1f} vs {:.1f} ms, "
      "p99 {:.1f} vs {:.1f} ms; {} x {}-step runs at once: {:.0f} vs {:.0f} steps/s ({:.2f}x)\n",
      r["pooled_p50_ms"].get<double>(), r["direct_p50_ms"].get<double>(), r["pooled_p99_ms"].get<double>(),
      r["direct_p99_ms"].get<double>(), r["workflows"].get<int>(), r["steps"].get<int>(),
      r["pooled_steps_per_s"].get<double>(), r["direct_steps_per_s"].get<double>(),
      r["pooled_to_direct_steps_per_s"].get<double>());
}

void print_transactional(const Result& r) {
  fmt::print(
      "\ntransactional steps: {} x {}-step workflows, {} rounds: {:.0f} steps/s inserting in the step's transaction, "
      "{:.0f} no-op steps/s, {:.0f} steps/s inserting on their own connections (PostgreSQL CPU per step {} / {} / "
      "{} us)\n",
      r["workflows"].get<int>(), r["steps"].get<int>(), r["rounds"].get<int>(), r["insert_steps_per_s"].get<double>(),
      r["noop_steps_per_s"].get<double>(), r["plain_insert_steps_per_s"].get<double>(),
      r["insert_pg_cpu_us_per_step"].dump(), r["noop_pg_cpu_us_per_step"].dump(),
      r["plain_insert_pg_cpu_us_per_step"].dump());
}

void print_codec(const Result& r) {
  fmt::print(
      "\ncodec: {} x {}-step no-op workflows, {} rounds: {:.0f} steps/s without a codec, {:.0f} with the SodiumCodec "
      "(WAL per step {} / {} B, PostgreSQL CPU per step {} / {} us)\n",
      r["workflows"].get<int>(), r["steps"].get<int>(), r["rounds"].get<int>(), r["plain_steps_per_s"].get<double>(),
      r["sodium_steps_per_s"].get<double>(), cpu_text(r, "plain_wal_bytes_per_step"),
      cpu_text(r, "sodium_wal_bytes_per_step"), cpu_text(r, "plain_pg_cpu_us_per_step"),
      cpu_text(r, "sodium_pg_cpu_us_per_step"));
}

}  // namespace

void print_result(const Result& result) {
  fmt::print("{}\n", result.dump());
  std::fflush(stdout);
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
  for (const auto& r : of_kind(results, "send_to_receive")) print_send_to_receive(r);
  for (const auto& r : of_kind(results, "children")) print_children(r);
  for (const auto& r : of_kind(results, "continue")) print_continue(r);
  for (const auto& r : of_kind(results, "transactional")) print_transactional(r);
  for (const auto& r : of_kind(results, "pooler")) print_pooler(r);
  for (const auto& r : of_kind(results, "codec")) print_codec(r);
  print_aims(results);
  std::fflush(stdout);
}

}  // namespace bench
