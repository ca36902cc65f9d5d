#!/usr/bin/env bash
# The README's first command: builds Remat, compiles the tutorial MLP (20
# Linear(1024, 1024) layers with ReLU, MSE loss, SGD, batch 4096) without a
# memory limit and at 50% of its no-remat peak, runs three steps of each on
# the CPU and prints the comparison.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${REMAT_BUILD_DIR:-$root/build}
"$root/utils/build.sh" remat-compile remat-run >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=$build/bin
steps=${REMAT_DEMO_STEPS:-3}

echo "== compiling examples/mlp.mlir (no limit, and at 50% of the no-remat peak)"
"$bin/remat-compile" "$root/examples/mlp.mlir" -o "$out/base.so"
"$bin/remat-compile" "$root/examples/mlp.mlir" -o "$out/half.so" \
  --memory-limit=50% 2>&1 | sed -n 's/.*remark: //p'
echo "== running $steps SGD steps of each on the CPU"
"$bin/remat-run" "$out/base.json" --steps="$steps" --json > "$out/base.out"
"$bin/remat-run" "$out/half.json" --steps="$steps" --json > "$out/half.out"
python3 "$root/utils/compare.py" "$out/base.out" "$out/half.out"
