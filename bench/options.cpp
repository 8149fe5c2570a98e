#include "options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace bench {
namespace {

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

}  // namespace

const std::vector<std::string> measurement_names = {"raw_queue", "throughput", "latency",  "scaling",  "replay",
                                                    "runs",      "messages",   "children", "continue", "transactional",
                                                    "codec",     "flow",       "pooler"};

int Config::scaled(int count) const { return std::max(1, static_cast<int>(std::lround(count * scale))); }

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

std::string usage() {
  return fmt::format("usage: durable-bench [--scale F] [--only {}]", fmt::join(measurement_names, "|"));
}

}  // namespace bench
