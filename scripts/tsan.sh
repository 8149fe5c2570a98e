#!/usr/bin/env bash
# Builds durable with ThreadSanitizer and runs the tests that exercise its threads: the thread
# pool, the activity slots, group commit, the dispatcher, parallel activities, shutdown
# hand-back, connection loss, many engines in one process, transactional activities, sagas and the payload codec.
# PostgreSQL is a throwaway cluster unless DURABLE_DATABASE_URL is set.
#   DURABLE_BUILD_DIR  build folder (default: build-tsan)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build-tsan}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDURABLE_TSAN=ON -DDURABLE_WERROR=ON \
  -DDURABLE_EXAMPLES=OFF -DDURABLE_BENCH=OFF -DDURABLE_INSTALL=OFF -DCMAKE_UNITY_BUILD=ON
cmake --build "$build" -j "$(nproc)" --target unit_tests pg_tests durable_test_worker durable-postgres
# Without this, a report is printed but the test still passes.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
concurrency='codec|transactional|shared transaction|TransactionContext|compensat|thread pool|the pool|shutdown|wait_idle|dispatcher|in parallel|hands|in flight|connections|ten engines|heartbeat|timeout|idempotency key|in batches|replayed elsewhere|thin client|slot|a batch|waiting on a key|permit|two commits|its first step|waiters|retried after a delay'
exec "$build/tools/durable-postgres" -- ctest --test-dir "$build" --output-on-failure -j 2 -R "$concurrency"
