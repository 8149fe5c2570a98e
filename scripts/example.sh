#!/usr/bin/env bash
# Builds durable and runs the main example (order processing with a crash and a resume)
# against a throwaway PostgreSQL it starts itself, or DURABLE_DATABASE_URL when set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target 01-order-processing
exec "$build/examples/01-order-processing"
