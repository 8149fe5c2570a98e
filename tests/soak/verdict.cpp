#include "soak/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace durable::soak {

namespace {

double growth_between(double from, double to) { return from > 0 ? to / from - 1 : (to > 0 ? 1 : 0); }

// The mean of a sample's `field` over samples [first, last).
template <typename T>
double mean_of(std::vector<Sample>::const_iterator first, std::vector<Sample>::const_iterator last, T Sample::*field) {
  double sum = 0;
  for (auto s = first; s != last; ++s) sum += static_cast<double>((*s).*field);
  return last > first ? sum / static_cast<double>(last - first) : 0;
}

double rounded_to(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

// Memory: the end against the warm-up's last sample.
void judge_memory(const Sample& warm, const Sample& end, const Limits& limits, Verdict& v) {
  const double growth = growth_between(static_cast<double>(warm.rss_kb), static_cast<double>(end.rss_kb));
  if (growth > limits.max_growth) {
    v.failed.push_back(
        fmt::format("memory grew {:.1f}%: VmRSS {} kB at {:.0f} s (warm-up end), {} kB at {:.0f} s; "
                    "bound {:.0f}%",
                    growth * 100, warm.rss_kb, warm.at_s, end.rss_kb, end.at_s, limits.max_growth * 100));
  }
  v.figures["rss_kb_warmup"] = warm.rss_kb;
  v.figures["rss_kb_end"] = end.rss_kb;
  v.figures["rss_growth"] = rounded_to(growth, 4);
}

// Connections: never more than the pool and LISTEN, and no session opened after the warm-up but
// in a slot of the pool still unopened at its end (the pool opens a connection when one is wanted
// and keeps it): any other is a new one, a leak or a connection broken and replaced.
void judge_connections(const Sample& warm, const Sample& end, int peak, int opened_after, const Limits& limits,
                       Verdict& v) {
  const int unopened = std::max(0, limits.max_connections - warm.connections);
  if (opened_after > unopened) {
    v.failed.push_back(
        fmt::format("the worker opened {} connection(s) after the warm-up: {} at {:.0f} s (warm-up "
                    "end), {} at {:.0f} s, {} slot(s) of its pool unopened at the warm-up's end",
                    opened_after, warm.connections, warm.at_s, end.connections, end.at_s, unopened));
  }
  if (peak > limits.max_connections) {
    v.failed.push_back(fmt::format("the worker held {} connections at once; its pool and LISTEN session are {}", peak,
                                   limits.max_connections));
  }
  v.figures["connections_warmup"] = warm.connections;
  v.figures["connections_end"] = end.connections;
  v.figures["connections_max"] = peak;
  v.figures["connections_opened_after_warmup"] = opened_after;
}

// Throughput per interval after the warm-up: the last third's mean against the first third's.
void judge_drift(std::vector<Sample>::const_iterator after, std::vector<Sample>::const_iterator end,
                 const Limits& limits, Verdict& v) {
  const auto third = (end - after) / 3;
  if (third == 0) {
    v.failed.push_back(fmt::format("{} interval(s) after the warm-up: too few to compare thirds", end - after));
    return;
  }
  const double first = mean_of(after, after + third, &Sample::completed);
  const double last = mean_of(end - third, end, &Sample::completed);
  const double drift = growth_between(first, last);
  if (std::abs(drift) > limits.max_drift) {
    v.failed.push_back(
        fmt::format("throughput drifted {:+.1f}%: {:.1f} runs per interval in the first third after "
                    "the warm-up, {:.1f} in the last; bound {:.0f}%",
                    drift * 100, first, last, limits.max_drift * 100));
  }
  v.figures["intervals_per_third"] = third;
  v.figures["throughput_first_third"] = rounded_to(first, 2);
  v.figures["throughput_last_third"] = rounded_to(last, 2);
  v.figures["throughput_drift"] = rounded_to(drift, 4);
  // Reported, not judged: start to result, which a loaded machine lengthens whatever the engine does.
  v.figures["latency_ms_first_third"] = rounded_to(mean_of(after, after + third, &Sample::latency_ms), 0);
  v.figures["latency_ms_last_third"] = rounded_to(mean_of(end - third, end, &Sample::latency_ms), 0);
}

void judge_outcome(const Outcome& o, const Limits& limits, Verdict& v) {
  if (o.failed > 0) {
    std::string first;
    for (const auto& f : o.failures) first += "\n    " + f;
    v.failed.push_back(fmt::format("{} run(s) failed or gave a wrong result:{}", o.failed, first));
  }
  if (o.completed + o.failed < o.started) {
    v.failed.push_back(
        fmt::format("{} of {} run(s) started did not end", o.started - o.completed - o.failed, o.started));
  }
  if (o.schedule_fires < limits.min_schedule_fires || o.schedule_failed > 0) {
    v.failed.push_back(fmt::format("the schedule's runs: {} completed, {} failed; at least {} expected",
                                   o.schedule_fires, o.schedule_failed, limits.min_schedule_fires));
  }
  if (o.worker_exit != 0) v.failed.push_back(fmt::format("the worker exited with {} after SIGTERM", o.worker_exit));
  v.figures["workflows_started"] = o.started;
  v.figures["workflows_completed"] = o.completed;
  v.figures["workflows_failed"] = o.failed;
  v.figures["schedule_fires"] = o.schedule_fires;
  v.figures["prunes"] = o.prunes;
  v.figures["pruned_runs"] = o.pruned;
}

}  // namespace

Verdict judge(const std::vector<Sample>& samples, const Limits& limits, const Outcome& outcome) {
  Verdict v;
  v.figures = Json::object();
  const auto after =
      std::find_if(samples.begin(), samples.end(), [&](const Sample& s) { return s.at_s > limits.warmup_s; });
  if (after == samples.begin() || after == samples.end()) {
    v.failed.push_back(fmt::format("{} sample(s): none at the warm-up's end ({:.0f} s) or none after it",
                                   samples.size(), limits.warmup_s));
  } else {
    int peak = 0, opened_after = 0;
    for (const auto& s : samples) peak = std::max(peak, s.connections);
    for (auto s = after; s != samples.end(); ++s) opened_after += s->opened;
    judge_memory(*(after - 1), samples.back(), limits, v);
    judge_connections(*(after - 1), samples.back(), peak, opened_after, limits, v);
    judge_drift(after, samples.end(), limits, v);
  }
  judge_outcome(outcome, limits, v);
  v.figures["warmup_s"] = limits.warmup_s;
  v.figures["verdict"] = v.ok() ? "ok" : "failed";
  return v;
}

}  // namespace durable::soak
