// Failpoints: named places where the fault-injection suite makes this process fail for real.
// Compiled in only by a build with the CMake option DURABLE_FAILPOINTS (on by default when the
// tests are built: it defines DURABLE_FAILPOINTS for the library), and off there unless
// $DURABLE_FAILPOINTS names them. A build without it (one to install, tests off) has none:
// failpoint() is an inline `false` the compiler removes, $DURABLE_FAILPOINTS is not read, and
// configure_failpoints throws for any spec but the empty one. Format: comma-separated `name=action`, action `kill` (SIGKILL this process),
// `kill@N` (at the Nth hit), `sleep:MS` (every hit), `sleep:MS/N` (every Nth hit), or `fail` /
// `fail@N` (failpoint() returns true, at every or at the Nth hit: the caller fails there), e.g.
//   DURABLE_FAILPOINTS="task.before_commit=kill@3"
// Names: task.after_claim, task.before_commit (the body returned, its outcome not committed),
// task.after_commit (committed, not yet acted on), claim.before_commit (inside a claim's transaction),
// runner.before_claim (a runner read the workflow names it claims, and has not claimed yet),
// dispatcher.before_claim (a dispatcher read the activity names it claims, and has not claimed yet),
// replay.after_inbox_read (a replay read its run's inbox and has not committed),
// replay.after_child_ids_read (a replay read the ids it starts children under, not committed),
// replay.after_commit (a claimed replay committed, its tasks not launched),
// start.before_commit / start.after_commit (around the statement of a start with its run's first replay),
// lost_answer.<write> (fail: a store write committed, its answer is lost; see ConnectionPool::write),
// transaction.connection_lost (fail: a transactional activity's session is ended before its COMMIT),
// lost_answer.activity_transaction (fail: a transactional activity committed, its answer is lost).
#pragma once

#include <string_view>

namespace durable::detail {

#ifdef DURABLE_FAILPOINTS
// True when a `fail` action fires here.
bool failpoint(std::string_view name);
#else
inline bool failpoint(std::string_view) { return false; }  // not compiled in: nothing to fire
#endif
// Replaces the configuration from $DURABLE_FAILPOINTS (tests in one process); same format. In a
// build without failpoints, a non-empty spec throws std::logic_error saying how to get them.
void configure_failpoints(std::string_view spec);

}  // namespace durable::detail
