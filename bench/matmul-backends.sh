#!/usr/bin/env bash
# Compares the CPU matmul backends on the MLP (20 x Linear(1024, 1024), batch
# 128): the runtime built with OpenBLAS against the same runtime built with
# REMAT_USE_BLAS=OFF (a plain loop nest), one build of the step, run by both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${REMAT_BUILD_DIR:-$root/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake -G Ninja -S "$root/runtime" -B "$tmp/loops" -DREMAT_USE_BLAS=OFF >/dev/null
ninja -C "$tmp/loops" >/dev/null
python3 "$root/examples/gen-mlp.py" --batch 128 -o "$tmp/mlp.mlir"
"$build/bin/remat-compile" "$tmp/mlp.mlir" -o "$tmp/mlp.so"
report() {
  python3 -c "import json,sys; j=json.load(sys.stdin); \
print(f\"{j['matmul_backend']:9s} median step {j['median_step_ms']:9.1f} ms, \
{j['predicted_cost_flops'] / j['median_step_ms'] / 1e6:6.1f} GFLOP/s\")"
}
"$build/bin/remat-run" "$tmp/mlp.json" --steps=3 --json | report
"$tmp/loops/bin/remat-run" "$tmp/mlp.json" --steps=1 --json | report
