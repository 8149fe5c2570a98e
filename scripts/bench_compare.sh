#!/usr/bin/env bash
# Side by side with an older durable: bench/compare/one_step_client.cpp (public API only) built
# against this tree and against COMMIT, each a RelWithDebInfo build of its own, then run in turns
# (old, new, old, new, ...) on one PostgreSQL. Prints each run's JSON line tagged with its side,
# then the medians of each side and their ratio (new over old).
#   scripts/bench_compare.sh COMMIT [TURNS] [-- RUNS IN_FLIGHT IDLE_RUNS]
# PostgreSQL: DURABLE_DATABASE_URL when set, else a throwaway cluster (build/tools/durable-postgres,
# so build the main tree first). Build folders are kept in DURABLE_COMPARE_DIR (default:
# build-compare/) so that a second comparison builds only what changed.
#   DURABLE_UNITY  OFF to compile each source alone (an old commit that does not build in batches)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 COMMIT [TURNS] [-- RUNS IN_FLIGHT IDLE_RUNS]" >&2; exit 2; }
commit="$(git -C "$root" rev-parse --verify "$1^{commit}")"
shift
turns=4
if [ $# -ge 1 ] && [ "$1" != "--" ]; then turns="$1"; shift; fi
[ $# -ge 1 ] && [ "$1" = "--" ] && shift
work="${DURABLE_COMPARE_DIR:-$root/build-compare}"
mkdir -p "$work"
old_tree="$work/tree-${commit:0:12}"
[ -d "$old_tree" ] || git -C "$root" worktree add --detach "$old_tree" "$commit" >&2

# A project that builds `tree` as a subproject and the program against it.
build_side() {
  local side="$1" tree="$2" dir="$work/$1-${3}"
  mkdir -p "$dir/project"
  cat > "$dir/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(durable_compare CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
add_subdirectory("$tree" durable)
add_executable(one-step-client "$root/bench/compare/one_step_client.cpp")
target_link_libraries(one-step-client PRIVATE durable::durable)
if(TARGET durable::testing)
  target_link_libraries(one-step-client PRIVATE durable::testing)
endif()
CMAKE
  cmake -S "$dir/project" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD="${DURABLE_UNITY:-ON}" >&2
  cmake --build "$dir/build" -j "$(nproc)" --target one-step-client >&2
  echo "$dir/build/one-step-client"
}
old_bin="$(build_side old "$old_tree" "${commit:0:12}")"
new_bin="$(build_side new "$root" current)"

cat > "$work/turns.sh" <<'SH'
set -euo pipefail
for ((i = 1; i <= TURNS; i++)); do
  echo "old $("$OLD_BIN" "$@")"
  echo "new $("$NEW_BIN" "$@")"
done
SH
cat > "$work/medians.py" <<'PY'
import json, statistics, sys
sides = {"old": [], "new": []}
for line in sys.stdin:
    side, _, text = line.partition(" ")
    if side in sides:
        print(line.rstrip())
        sides[side].append(json.loads(text))
print("medians (new/old):")
for key in ["runs_per_s", "p50_ms", "p99_ms", "idle_p50_ms", "idle_p99_ms"]:
    old = statistics.median(r[key] for r in sides["old"])
    new = statistics.median(r[key] for r in sides["new"])
    print(f"  {key:12} old {old:9.2f}  new {new:9.2f}  {new / old:5.2f}x")
PY
export TURNS="$turns" OLD_BIN="$old_bin" NEW_BIN="$new_bin"
if [ -n "${DURABLE_DATABASE_URL:-}" ]; then
  bash "$work/turns.sh" "$@" | python3 "$work/medians.py"
else
  "$root/build/tools/durable-postgres" -- bash "$work/turns.sh" "$@" | python3 "$work/medians.py"
fi
