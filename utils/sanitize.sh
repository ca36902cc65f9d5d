#!/usr/bin/env bash
# Builds the solver core, remat-solve and the GoogleTest unit tests with
# AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ (override
# with REMAT_ASAN_BUILD_DIR) and runs them: the unit tests, and remat-solve
# on a Checkmate graph at a sweep of budgets and with annealing. The
# executor and the searches index flat arrays everywhere; an out-of-bounds
# read there would otherwise only show as a wrong answer, if at all. CI runs
# it after the test command. Prints one "sanitizers: ..." line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${REMAT_ASAN_BUILD_DIR:-$root/build-asan}
"$root/utils/setup.sh"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
fi
ninja -C "$build" RematUnitTests remat-solve
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1
"$build/test/Unit/RematUnitTests" --gtest_brief=1
graph="$root/../shared/benchmarks/checkmate-graphs/ResNet50_256_train.json"
if [ -f "$graph" ]; then
  "$build/bin/remat-solve" "$graph" --budget=0.12x,0.2x,0.5x,1x --json >/dev/null
  "$build/bin/remat-solve" "$graph" --budget=0.15x --search-seconds=0.5 \
    --json >/dev/null
  # A refusal (exit status 2: no schedule meets the budget) builds both
  # ladders; a sanitizer's abort would be another status.
  status=0
  "$build/bin/remat-solve" "$graph" --budget=0.05x --json >/dev/null ||
    status=$?
  if [ "$status" -ne 2 ]; then
    echo "remat-solve at 0.05x: exit status $status, expected 2" >&2
    exit 1
  fi
fi
echo "sanitizers: unit tests and remat-solve clean"
