#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs each
# for a bounded time on a copy of its seed corpus (fuzz/corpus/<name>), kept in the build folder.
# Exits non-zero when a target finds a crash; the reproducer and the log are in the build folder.
#   DURABLE_FUZZ_BUILD_DIR  build folder (default: build-fuzz)
#   DURABLE_FUZZ_SECONDS    seconds per target (default: 30)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

# libFuzzer comes with clang (libclang-rt-dev holds its runtime); setup.sh installs g++ only.
if ! command -v clang++ >/dev/null 2>&1; then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "fuzz: clang++ is missing; run this script as root or install sudo" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clang libclang-rt-dev
fi

build="${DURABLE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${DURABLE_FUZZ_SECONDS:-30}"
# -O1 with line tables only, as libFuzzer's documentation advises: the build is most of this
# script's time on 2 cores (about 10 minutes at -O2 -g), and a crash's stack still names its lines.
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DDURABLE_FUZZ=ON \
  -DDURABLE_TESTS=OFF -DDURABLE_EXAMPLES=OFF -DDURABLE_BENCH=OFF -DDURABLE_INSTALL=OFF -DCMAKE_UNITY_BUILD=ON
cmake --build "$build" -j "$(nproc)" --target durable_fuzz_payload durable_fuzz_cron durable_fuzz_console durable_fuzz_history

# run NAME MAX_LEN: fuzzes durable_fuzz_NAME; its corpus grows in $build/fuzz/corpus/NAME and a
# crash lands in $build/fuzz/artifacts/NAME/. Prints one summary line; fails when it crashed.
run() {
  local name=$1 max_len=$2 dir="$build/fuzz"
  local corpus="$dir/corpus/$name" artifacts="$dir/artifacts/$name/" log="$dir/$name.log"
  mkdir -p "$corpus" "$artifacts"
  cp "$root/fuzz/corpus/$name/"* "$corpus/"  # a copy: the source tree is never written
  local status=0
  "$dir/durable_fuzz_$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=25 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" >"$log" 2>&1 || status=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [[ $status -eq 0 ]]; then
    echo "fuzz: $name: ${execs:-?} executions in ${seconds}s, no crash"
  else
    local found input
    found=$(grep -m 1 -E 'FUZZ_ASSERT failed|runtime error|what\(\)|^SUMMARY' "$log" | sed 's/^ *//' || true)
    input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
    echo "fuzz: $name: CRASH (exit $status) after ${execs:-?} executions: ${found:-see log}; input ${input:-?}; log $log"
  fi
  return "$status"
}

failed=0
run payload 4096 || failed=1
run cron 256 || failed=1
run console 8192 || failed=1
run history 16384 || failed=1
exit "$failed"
