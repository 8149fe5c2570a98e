// The soak's samples and its verdict (scripts/soak.sh, docs/reliability.md#the-soak): after a
// warm-up the worker's memory and connections stay flat, throughput does not drift, and every
// run started completed with the result it should have.
#pragma once

#include <durable/durable.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace durable::soak {

// One sample, taken at the end of an interval.
struct Sample {
  double at_s = 0;             // seconds since the load began
  std::int64_t rss_kb = 0;     // the worker's VmRSS (/proc/<pid>/status)
  int connections = 0;         // sessions the worker holds (pg_stat_activity, by application_name)
  int opened = 0;              // of those, how many it opened since the sample before
  std::int64_t completed = 0;  // runs that completed, with their right result, in the interval
  std::int64_t in_flight = 0;  // started and not yet completed, now
  double latency_ms = 0;       // mean start-to-result time of the runs completed in the interval
};

struct Limits {
  double warmup_s = 600;     // samples up to here are the warm-up; its last one is the baseline
  double max_growth = 0.05;  // memory at the end: at most this above the baseline
  int max_connections = 9;   // never more at once: the pool's size and the LISTEN session
  double max_drift = 0.10;   // throughput per interval, last third against first third after warm-up
  std::int64_t min_schedule_fires = 1;
};

// What the load did in all, once it drained.
struct Outcome {
  std::int64_t started = 0;
  std::int64_t completed = 0;         // with the right result
  std::int64_t failed = 0;            // a wrong result, a failed run, a run not found
  std::vector<std::string> failures;  // the first few, each what went wrong with which run
  std::int64_t schedule_fires = 0;    // runs the schedule started, each completed with its result
  std::int64_t schedule_failed = 0;
  std::int64_t pruned = 0;  // runs the prunes deleted
  int prunes = 0;
  int worker_exit = 0;  // the worker's exit code after SIGTERM (or 128 + signal)
};

struct Verdict {
  std::vector<std::string> failed;  // one line per failed check, with its figures
  Json figures;                     // the summary line's figures
  bool ok() const { return failed.empty(); }
};

// Judges the samples (at least one at or before the warm-up's end, one after) and the outcome.
Verdict judge(const std::vector<Sample>& samples, const Limits& limits, const Outcome& outcome);

}  // namespace durable::soak
