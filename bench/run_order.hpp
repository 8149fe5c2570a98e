// Which measurements durable-bench runs, in which order, with which sizes.
#pragma once

#include <vector>

#include "options.hpp"
#include "support.hpp"

namespace bench {

// Runs the measurements `config` wants against durable::testing::database_url(), printing each
// result's JSON line as it comes (report.hpp); returns them all, in order.
std::vector<Result> run_measurements(const Config& config);

}  // namespace bench
