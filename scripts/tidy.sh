#!/usr/bin/env bash
# Runs clang-tidy (Debian's clang-tidy 14, with the checks of .clang-tidy) on the C++ sources a
# change touches: the .cpp files under src/, tools/ and bench/ changed since BASE, and for each header
# changed since BASE one source that includes it. Each is checked as the build folder compiles it, so the
# folder needs compile_commands.json (scripts/test.sh exports it). Exit 1 on any finding.
#   scripts/tidy.sh [BASE]   BASE: a commit (default: the last commit older than a day before HEAD's,
#                            so CI checks what the latest day of work changed); e.g. origin/main
#   DURABLE_BUILD_DIR        the build folder (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${DURABLE_BUILD_DIR:-$root/build}"
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy not found (apt install clang-tidy)" >&2; exit 2; }
[[ -f "$build/compile_commands.json" ]] ||
  { echo "tidy: $build/compile_commands.json is missing: build there with scripts/test.sh first" >&2; exit 2; }
# A unity build's compile_commands.json names its batch files, not the sources: configure (not build)
# a tree beside it with the same options, compiling each source alone, for its compile commands.
commands="$build"
if grep -q '/Unity/unity_' "$build/compile_commands.json"; then
  commands="$build/tidy-commands"
  mapfile -t same < <(sed -nE 's/^((CMAKE_BUILD_TYPE|DURABLE_[A-Z_]+|CMAKE_CXX_COMPILER):[A-Z]+=.*)$/-D\1/p' \
    "$build/CMakeCache.txt")
  cmake -S "$root" -B "$commands" "${same[@]}" -DCMAKE_UNITY_BUILD=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi

base="${1:-}"
if [[ -z "$base" ]]; then
  head_date=$(git log -1 --format=%cI HEAD)
  base=$(git rev-list -1 --before="$(date -d "$head_date - 1 day" --iso-8601=seconds)" HEAD || true)
  [[ -n "$base" ]] || base=$(git rev-list --max-parents=0 HEAD | tail -n 1)
fi
git rev-parse --verify --quiet "$base^{commit}" >/dev/null || { echo "tidy: '$base' is not a commit" >&2; exit 2; }

mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" HEAD -- src tools bench include)
files=()
for path in "${changed[@]}"; do
  case "$path" in
    *.cpp) files+=("$path") ;;
    *.hpp)  # one source that includes it (its own .cpp if it has one): a header's findings show
            # through any source that includes it (HeaderFilterRegex), so one is enough
      own="${path%.hpp}.cpp"
      if [[ -f "$own" ]]; then
        files+=("$own")
      else
        name=${path#src/}
        name=${name#include/}
        user=$(git grep -l -F "#include \"$name\"" -- 'src/*.cpp' 'tools/*.cpp' 'bench/*.cpp' | head -n 1 || true)
        files+=("$user")
      fi ;;
  esac
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '^$' | sort -u)
# Only what the build compiles (a file of a target it leaves out, say the console's without httplib).
mapfile -t files < <(python3 - "$commands/compile_commands.json" "${files[@]}" <<'PY'
import json, os, sys
compiled = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for f in sys.argv[2:]:
    if os.path.realpath(f) in compiled:
        print(f)
PY
)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "tidy: no C++ source changed since $(git rev-parse --short "$base")"
  exit 0
fi
echo "tidy: ${#files[@]} sources changed since $(git rev-parse --short "$base")"
status=0
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$commands" --quiet 2>/dev/null >"$build/tidy.log" ||
  status=$?
if [[ $status -ne 0 ]]; then
  grep -E '^[^ ].*(warning|error):' "$build/tidy.log" | sort -u >&2 || true
  echo "tidy: findings above (all of them in $build/tidy.log); fix them, or say in .clang-tidy why a check is off" >&2
  exit 1
fi
echo "tidy: no findings"
