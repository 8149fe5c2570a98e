// durable-bench's command line: `[--scale F] [--only NAME]`, and the usage a bad one gets.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

// A bad command line: main prints the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What --only takes, in the order the measurements run.
extern const std::vector<std::string> measurement_names;

struct Config {
  double scale = 1.0;  // multiplies every workflow, job and loaded row count (not the 1000 steps of the long run)
  std::string only{};  // empty: all measurements
  int scaled(int count) const;
  bool wants(const std::string& name) const { return only.empty() || only == name; }
};

// Throws UsageError naming what is wrong.
Config parse_args(const std::vector<std::string>& args);

// "usage: durable-bench [--scale F] [--only raw_queue|...]".
std::string usage();

}  // namespace bench
