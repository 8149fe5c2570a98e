#!/usr/bin/env bash
# The pg tests of every feature's core paths with each engine under a role granted only the
# schema's rows (DURABLE_TEST_ROLES=engine; docs/operations.md, Roles and privileges): about 170
# tests, 4 minutes on 2 cores. The test suite (scripts/test.sh) runs a shorter set of them
# (ctest label pg_roles; not in a sanitizer build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target pg_tests durable_test_worker durable-postgres
excluded="~[migrations]~[schema]~[roles]~[transactions]~[replay_check]~[process]~[crash]"
spec=""
for tag in queues messages children cancel continue schedules timer saga keys idempotency retry runs paused_types \
  wake triggers; do
  spec="$spec,[$tag]$excluded"
done
DURABLE_TEST_ROLES=engine "$build/tools/durable-postgres" -- "$build/tests/pg_tests" "${spec#,}" --durations yes
