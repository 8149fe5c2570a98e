// Failpoints: named places where the fault-injection suite makes this process fail for real.
// Compiled in always and off unless $DURABLE_FAILPOINTS names them, so tests exercise the
// shipped code. Format: comma-separated `name=action`, action `kill` (SIGKILL this process),
// `kill@N` (at the Nth hit), `sleep:MS` (every hit) or `sleep:MS/N` (every Nth hit), e.g.
//   DURABLE_FAILPOINTS="task.before_commit=kill@3"
// Names: task.after_claim, task.before_commit (the body returned, its outcome not committed),
// task.after_commit (committed, not yet acted on), claim.before_commit (inside a claim's transaction).
#pragma once

#include <string_view>

namespace durable::detail {

void failpoint(std::string_view name);

}  // namespace durable::detail
