#!/usr/bin/env bash
# Builds durable-bench (RelWithDebInfo, in its own build folder) and runs it with the given
# arguments, e.g. `scripts/bench.sh --scale 0.2 --only throughput`. PostgreSQL is
# DURABLE_DATABASE_URL when set, else a throwaway cluster the program starts (and stops) itself.
# Only the results go to stdout, so `scripts/bench.sh > results.txt` keeps them apart from the build.
#   DURABLE_BUILD_DIR  build folder (default: build-bench)
#   DURABLE_WERROR     ON to treat warnings as errors
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh" >&2
build="${DURABLE_BUILD_DIR:-$root/build-bench}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDURABLE_WERROR="${DURABLE_WERROR:-OFF}" \
  -DDURABLE_BENCH=ON >&2
cmake --build "$build" -j "$(nproc)" --target durable-bench >&2
exec "$build/bench/durable-bench" "$@"
