#!/usr/bin/env bash
# The README's first command: builds Remat, compiles the tutorial MLP (20
# Linear(1024, 1024) layers with ReLU, MSE loss, SGD, batch 4096) without a
# memory limit and at 50% of its no-remat peak, runs three steps of each on
# the GPU when one is present (the CUDA target), else on the CPU, and prints
# the comparison. REMAT_DEMO_TARGET=cpu|cuda overrides the choice.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${REMAT_BUILD_DIR:-$root/build}
"$root/utils/build.sh" remat-compile remat-run >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=$build/bin
steps=${REMAT_DEMO_STEPS:-3}

target=${REMAT_DEMO_TARGET:-}
if [[ -z $target ]]; then
  target=cpu
  if [[ -e /dev/nvidia0 ]] && nvidia-smi -L >/dev/null 2>&1; then
    target=cuda
  fi
fi
where="the CPU"
[[ $target == cuda ]] && where="the GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"

echo "== compiling examples/mlp.mlir for $target (no limit, and at 50% of the no-remat peak)"
"$bin/remat-compile" "$root/examples/mlp.mlir" --target="$target" -o "$out/base.so" \
  2>&1 | sed -n 's/.*remark: //p'
"$bin/remat-compile" "$root/examples/mlp.mlir" --target="$target" -o "$out/half.so" \
  --memory-limit=50% 2>&1 | sed -n 's/.*remark: //p'
echo "== running $steps SGD steps of each on $where"
"$bin/remat-run" "$out/base.json" --steps="$steps" --json > "$out/base.out"
"$bin/remat-run" "$out/half.json" --steps="$steps" --json > "$out/half.out"
python3 "$root/utils/compare.py" "$out/base.out" "$out/half.out"
