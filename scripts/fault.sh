#!/usr/bin/env bash
# The full fault-injection suite (tests/fault): 2,000-workflow runs with worker processes
# killed, frozen and cut off, PostgreSQL stopped and restarted, a REPEATABLE READ transaction
# held for 5 minutes, a primary stopped hard and its streaming standby promoted. Prints each fault's figures and writes them, one JSON line per fault,
# to fault-report.jsonl (or $DURABLE_FAULT_REPORT). About 15 minutes on 2 cores.
# The short versions run with the test suite (scripts/test.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target fault_tests durable_fault_worker durable-postgres
export DURABLE_FAULT_FULL=1
export DURABLE_FAULT_REPORT="${DURABLE_FAULT_REPORT:-$PWD/fault-report.jsonl}"
: > "$DURABLE_FAULT_REPORT"
# One process, so no per-test time limit applies; every test stops what it started.
"$build/tools/durable-postgres" -- "$build/tests/fault_tests" "[fault]" --durations yes
echo "figures: $DURABLE_FAULT_REPORT"
