#!/usr/bin/env bash
# The soak (tests/soak; docs/reliability.md, The soak): a worker process under a steady mixed load
# (activities, timers, messages, child workflows, an every-minute schedule, a prune every three
# minutes) for the given seconds, default 3600; its memory, connections and throughput are sampled
# every 10 s (every 5 s below 20 minutes) and must stay flat after the first ten minutes (the first
# third below 20 minutes). Exits non-zero naming the check that failed. The test suite
# (scripts/test.sh) runs it for two minutes (ctest label soak).
#   scripts/soak.sh [SECONDS [RATE]]     RATE: runs started a second, default 10
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target durable_soak durable_test_worker durable-postgres
exec "$build/tools/durable-postgres" -- "$build/tests/durable_soak" "${1:-3600}" ${2:+"$2"}
