#!/usr/bin/env bash
# The pg tests of every feature's core paths and the fault tests (short sizes; DURABLE_FAULT_FULL=1
# for the full ones), each engine through a PgBouncer in transaction mode in EngineOptions::pooler_mode
# (DURABLE_TEST_POOLER=1; docs/operations.md, Behind PgBouncer). The test suite (scripts/test.sh)
# runs a shorter set of them (ctest label pooler; not in a sanitizer build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target pg_tests fault_tests durable_test_worker durable_fault_worker \
  durable-postgres
excluded="~[migrations]~[schema]~[roles]~[replay_check]~[pooler]~[skew]~[tls]~[tenants]~[failover]"
spec=""
for tag in queues messages children cancel continue schedules timer saga keys idempotency retry runs paused_types \
  wake triggers transactions process crash; do
  spec="$spec,[$tag]$excluded"
done
export DURABLE_TEST_POOLER=1
"$build/tools/durable-postgres" -- "$build/tests/pg_tests" "${spec#,}" --durations yes
# Fault 12 (failover) starts servers of its own, connected to directly: left out.
"$build/tools/durable-postgres" -- "$build/tests/fault_tests" "[fault]~[failover]" --durations yes
