// What the measurements share: their results, timing, percentiles, progress lines on stderr, a
// fresh schema each, and the engine processes the throughput runs start.
#pragma once

#include <fmt/format.h>
#include <sys/types.h>
#include <durable/durable.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// Results keep their fields in the order written, so the JSON lines read like the table.
using Result = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::string processes_text(int processes);

double seconds_since(Clock::time_point start);

// Nearest-rank percentile of an ascending vector.
double percentile(const std::vector<double>& sorted, double p);

template <typename... Args>
void progress(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "[bench] {}\n", fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stderr);
}

// A fresh schema for one measurement, dropped when it ends (also when it fails).
class ScratchSchema {
 public:
  explicit ScratchSchema(std::string url);
  ~ScratchSchema();
  ScratchSchema(const ScratchSchema&) = delete;
  ScratchSchema& operator=(const ScratchSchema&) = delete;
  const std::string& name() const { return name_; }
  const std::string& url() const { return url_; }

 private:
  std::string url_, name_;
};

// SQL written against `{s}`, the schema. The benchmark's schema names come from
// durable::testing::unique_schema, which only makes plain lowercase identifiers: no quoting needed.
std::string in_schema(const std::string& sql, const std::string& schema);

// Loads rows into a freshly migrated schema: runs `statements` (complete SQL) in one transaction,
// then leaves the tables as a long-running system would have them: vacuumed (visibility map and
// hint bits set, so what is timed next does not pay for first touches of the loaded pages),
// analyzed (the planner knows the row counts), and checkpointed (what is timed next does not pay
// for the load's full-page writes). Progress lines start with `label`.
void load_by_sql(const std::string& url, const std::string& schema, const std::vector<std::string>& statements,
                 const std::string& label);

// Engine processes for the throughput runs: this program re-executed as `worker SCHEMA`.
// They are stopped with SIGTERM (and reaped) when this object goes away.
class WorkerProcesses {
 public:
  WorkerProcesses(const std::string& url, const std::string& schema, int count);
  ~WorkerProcesses() { stop(); }
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;

 private:
  struct Worker {
    pid_t pid = 0;
    int stdout_fd = -1;
  };

  void spawn(const std::string& url, const std::string& schema);
  void stop();

  std::vector<Worker> workers_;
};

}  // namespace bench
