#!/usr/bin/env bash
# The README's test command: builds and runs every test (lit and GoogleTest,
# through the check-remat target), then prints one "N passed, N failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${REMAT_BUILD_DIR:-$root/build}
"$root/utils/setup.sh" --with-torch || exit 1
"$root/utils/build.sh" || exit 1
log=$(mktemp)
ninja -C "$build" check-remat 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
count() { sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
passed=$(count Passed); failed=$(count Failed)
rm -f "$log"
echo "${passed:-0} passed, ${failed:-0} failed"
if [ "$status" -ne 0 ] || [ "${passed:-0}" -eq 0 ]; then
  exit 1
fi
