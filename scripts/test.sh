#!/usr/bin/env bash
# Builds durable and runs the whole test suite: unit tests, tests against PostgreSQL, the
# examples and the packaging test. PostgreSQL is a throwaway cluster started for the run
# (unix socket in a temporary folder, stopped at exit) unless DURABLE_DATABASE_URL is set.
#   DURABLE_BUILD_DIR  build folder (default: build)
#   DURABLE_WERROR     ON to treat warnings as errors (CI)
#   DURABLE_SANITIZE   ON for an AddressSanitizer + UndefinedBehaviorSanitizer build
#   DURABLE_BENCH      OFF to leave the benchmark program out (it is no test; CI builds it once)
#   DURABLE_EXAMPLES   OFF to leave the examples out (CI's sanitizer build: they run unsanitized
#                      in its README stage, and the tests cover the same library code)
#   DURABLE_UNITY      OFF to compile each source of the library, tools, examples and benchmark alone
#                      (default ON: in batches, a unity build, 0.6x the time; test sources are
#                      batched apart from this, see DURABLE_UNITY_TESTS in tests/CMakeLists.txt)
#   DURABLE_CTEST_ARGS more arguments for ctest (CI's sanitizer build: -LE pg_roles, the tests run
#                      again under the engine role, whose code the other tests cover)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${DURABLE_BUILD_DIR:-$root/build}"
build_type=RelWithDebInfo
[ "${DURABLE_SANITIZE:-OFF}" = ON ] && build_type=Debug
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$build_type" \
  -DDURABLE_WERROR="${DURABLE_WERROR:-OFF}" -DDURABLE_SANITIZE="${DURABLE_SANITIZE:-OFF}" \
  -DDURABLE_BENCH="${DURABLE_BENCH:-ON}" -DDURABLE_EXAMPLES="${DURABLE_EXAMPLES:-ON}" \
  -DCMAKE_UNITY_BUILD="${DURABLE_UNITY:-ON}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
cmake --build "$build" -j "$(nproc)"
# shellcheck disable=SC2086 # more arguments, split on spaces
exec "$build/tools/durable-postgres" -- ctest --test-dir "$build" --output-on-failure -j 2 ${DURABLE_CTEST_ARGS:-}
