// durable-bench's report on stdout: one JSON line per result as it comes, then a table of them
// all and of their aims.
#pragma once

#include <vector>

#include "support.hpp"

namespace bench {

// The result's JSON line, flushed at once (a long run shows what it has measured so far).
void print_result(const Result& result);

// The table: one section per measurement that ran, then each aim, met or NOT met.
void print_table(const std::vector<Result>& results);

}  // namespace bench
