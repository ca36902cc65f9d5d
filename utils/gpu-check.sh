#!/usr/bin/env bash
# GPU checks and benchmark for the CUDA target, in two halves, because the
# GPU machine has no MLIR:
#
#   utils/gpu-check.sh prepare [BUNDLE]        # here, after ./utils/build.sh
#   utils/gpu-check.sh run [BUNDLE] [RESULT]   # on the GPU machine
#
# prepare compiles, into BUNDLE (default build/gpu-bundle, 32 MB today):
#   - every example model for --target=cuda without a limit and at 75, 50
#     and 25% of its peak (a limit the solver cannot reach is recorded as
#     refused, with the compiler's message);
#   - every example model without a limit with matmuls as one thread per
#     output element (--gpu-tile-contractions=false), and with reductions as
#     one thread per output (--gpu-block-reductions=false), and with 8 x 8
#     matmul register tiles (--gpu-register-tile=8), to time the default
#     kernels against;
#   - CI-size models with --return-gradients, for CUDA without a limit and at
#     50%, with the CPU build's gradients after the first step as the
#     reference (later steps drift apart in float32: the two sum in other
#     orders), and in float64, against the CPU's float64 gradients after 3
#     steps;
#   - a float64 MLP for a finite-difference gradient check on the GPU.
# run needs only CMake, a C++ compiler and the NVIDIA driver: it builds the
# runtime and remat-run with CMake alone (no CUDA toolkit, no MLIR), runs
# everything with a timeout each, and writes one JSON file (default
# BUNDLE/gpu-check.json) holding the GPU's name, the date and every
# remat-run --json result; it prints a summary table as it goes.
# `utils/gpu-check.sh report RESULT` (here) turns that file into the
# markdown table for docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODELS="mlp resnet unet gpt"
LIMITS="none 75% 50% 25%"
SMALL_MLP="--layers 12 --width 32 --batch 512"
SMALL_RESNET="--width 4 --image 16 --batch 64"
SMALL_UNET="--depth 2 --width 4 --image 32 --batch 2"
SMALL_GPT="--layers 2 --width 32 --heads 2 --seq 32 --vocab 32 --batch 4"

prepare() {
  local dir=${1:-build/gpu-bundle}
  local bin=$ROOT/build/bin py=/usr/bin/python3
  [[ -x $bin/remat-compile ]] || { echo "gpu-check: build first (./utils/build.sh)" >&2; exit 1; }
  rm -rf "$dir" && mkdir -p "$dir"
  : > "$dir/refused.txt"
  for m in $MODELS; do
    for l in $LIMITS; do
      local name=$m-${l%\%} flag=()
      [[ $l == none ]] || flag=(--memory-limit="$l")
      if ! "$bin/remat-compile" "examples/$m.mlir" --target=cuda "${flag[@]}" \
          -o "$dir/$name.so" 2> "$dir/$name.log"; then
        echo "$name: $(grep -m1 error "$dir/$name.log")" >> "$dir/refused.txt"
      fi
      rm -f "$dir/$name.log"
    done
    "$bin/remat-compile" "examples/$m.mlir" --target=cuda \
      --gpu-tile-contractions=false -o "$dir/$m-naive.so"
    "$bin/remat-compile" "examples/$m.mlir" --target=cuda \
      --gpu-block-reductions=false -o "$dir/$m-rowthread.so"
    "$bin/remat-compile" "examples/$m.mlir" --target=cuda \
      --gpu-register-tile=8 -o "$dir/$m-tile8.so"
  done
  for m in $MODELS; do
    local size=SMALL_${m^^}
    $py "examples/gen-$m.py" ${!size} -o "$dir/small-$m.mlir"
    "$bin/remat-compile" -O1 "$dir/small-$m.mlir" --return-gradients \
      -o "$dir/small-$m-cpu.so"
    "$bin/remat-run" "$dir/small-$m-cpu.json" --steps=1 --json \
      --save-outputs="$dir/small-$m-cpu.grads" > "$dir/small-$m-cpu.out"
    "$bin/remat-compile" "$dir/small-$m.mlir" --target=cuda \
      --return-gradients -o "$dir/small-$m-base.so"
    "$bin/remat-compile" "$dir/small-$m.mlir" --target=cuda \
      --return-gradients --memory-limit=50% -o "$dir/small-$m-half.so" 2>/dev/null
    $py "examples/gen-$m.py" ${!size} --dtype f64 -o "$dir/small-$m-f64.mlir"
    "$bin/remat-compile" -O1 "$dir/small-$m-f64.mlir" --return-gradients \
      -o "$dir/small-$m-f64-cpu.so"
    "$bin/remat-run" "$dir/small-$m-f64-cpu.json" --steps=3 \
      --save-outputs="$dir/small-$m-f64-cpu.grads" > /dev/null
    "$bin/remat-compile" "$dir/small-$m-f64.mlir" --target=cuda \
      --return-gradients -o "$dir/small-$m-f64.so"
    rm -f "$dir"/small-$m-cpu.so "$dir"/small-$m-f64-cpu.{so,json} \
      "$dir"/small-$m*.mlir
  done
  $py examples/gen-mlp.py --layers 6 --width 32 --batch 256 --dtype f64 \
    -o "$dir/mlp64.mlir"
  "$bin/remat-compile" "$dir/mlp64.mlir" --target=cuda --return-gradients \
    --memory-limit=70% -o "$dir/mlp64.so" 2>/dev/null
  rm -f "$dir/mlp64.mlir"
  echo "gpu-check: bundle in $dir ($(du -sh "$dir" | cut -f1)); refused:"
  cat "$dir/refused.txt"
}

run() {
  local dir=${1:-build/gpu-bundle}
  local result=${2:-$dir/gpu-check.json}
  # Seconds after which items left are skipped, and each item's own limit:
  # the whole run must fit a GPU lease.
  local deadline=${GPU_CHECK_DEADLINE:-420} tmo=${GPU_CHECK_TIMEOUT:-60}
  local start=$SECONDS
  local rt=$dir/runtime-build
  cmake -S runtime -B "$rt" -DCMAKE_BUILD_TYPE=Release > "$rt.log" 2>&1 ||
    { cat "$rt.log"; exit 1; }
  cmake --build "$rt" -j "$(nproc)" >> "$rt.log" 2>&1 || { cat "$rt.log"; exit 1; }
  echo "gpu-check: runtime built in $((SECONDS - start)) s"
  local run=$rt/bin/remat-run
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
  local entries=()
  # The result file is rewritten after every item, so that a run cut short
  # still leaves valid JSON with what it did.
  flush() {
    {
      echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"gpu\": \"$gpu\","
      echo " \"refused\": \"$(tr -d '"\\' < "$dir/refused.txt" | tr '\n' ';')\","
      echo " \"runs\": ["
      local i
      for i in "${!entries[@]}"; do
        [[ $i == 0 ]] || echo ","
        echo "  ${entries[$i]}"
      done
      echo "]}"
    } > "$result"
  }
  # One result: name, what it checks, remat-run's JSON (or its error).
  record() {
    local name=$1 kind=$2 out=$3 rc=$4
    local body
    if [[ $rc == 0 && -s $out ]] && head -c1 "$out" | grep -q '{'; then
      body=$(tail -1 "$out")
    else
      body="{\"error\": \"$(tr -d '"\\' < "$out" | tr '\n' ' ' | cut -c1-400)\", \"rc\": $rc}"
    fi
    entries+=("{\"name\": \"$name\", \"kind\": \"$kind\", \"result\": $body}")
    flush
  }
  # Past the deadline, each item left is recorded as skipped.
  late() {
    ((SECONDS - start < deadline)) && return 1
    entries+=("{\"name\": \"$1\", \"kind\": \"skipped\", \"result\": {\"error\": \"past the $deadline s deadline\"}}")
    flush
    echo "$1: skipped (past the $deadline s deadline)"
  }
  field() { grep -o "\"$2\": [^,}]*" "$1" | head -1 | sed 's/.*: //'; }
  printf '%-14s %14s %14s %14s %10s %10s\n' run predicted measured pool-high step-ms device-ms
  for m in $MODELS; do
    for l in $LIMITS; do
      local name=$m-${l%\%} out=$dir/$m-${l%\%}.out rc=0
      [[ -f $dir/$name.json ]] || continue
      late "$name" && continue
      timeout "$tmo" "$run" "$dir/$name.json" --steps=10 --json > "$out" 2>&1 || rc=$?
      record "$name" bench "$out" "$rc"
      if [[ $rc == 0 ]]; then
        printf '%-14s %14s %14s %14s %10s %10s\n' "$name" \
          "$(field "$out" predicted_peak_bytes)" "$(field "$out" measured_peak_bytes)" \
          "$(field "$out" pool_peak_bytes)" "$(field "$out" median_step_ms)" \
          "$(field "$out" median_device_ms)"
      else
        echo "$name: failed ($rc): $(head -c 300 "$out")"
      fi
    done
  done
  # Gradients: the first step's against the CPU build's (float32), 3 steps
  # of the build at 50% against the build without a limit (bitwise: the
  # same hashes), and 3 float64 steps against the CPU's float64 gradients.
  for m in $MODELS; do
    for v in base half; do
      local name=small-$m-$v out=$dir/small-$m-$v.out rc=0
      [[ -f $dir/$name.json ]] || continue
      late "$name" && continue
      timeout "$tmo" "$run" "$dir/$name.json" --steps=1 --json \
        --compare-outputs="$dir/small-$m-cpu.grads" --compare-rtol=2e-2 \
        > "$out" 2>&1 || rc=$?
      record "$name" gradients-vs-cpu "$out" "$rc"
      echo "$name: rc $rc, loss $(field "$out" losses | head -c 40), first-step gradients vs CPU: worst error $(field "$out" compare_worst_error)"
      out=$dir/small-$m-$v-3.out rc=0
      timeout "$tmo" "$run" "$dir/$name.json" --steps=3 --json > "$out" 2>&1 || rc=$?
      record "$name-3steps" remat-identical "$out" "$rc"
      echo "$name, 3 steps: rc $rc, losses $(field "$out" losses | head -c 60)..., outputs fnv1a $(field "$out" outputs_fnv1a)"
    done
    local name=small-$m-f64 out=$dir/small-$m-f64.out rc=0
    [[ -f $dir/$name.json ]] || continue
    late "$name" && continue
    timeout "$tmo" "$run" "$dir/$name.json" --steps=3 --json \
      --compare-outputs="$dir/small-$m-f64-cpu.grads" --compare-rtol=1e-9 \
      > "$out" 2>&1 || rc=$?
    record "$name" f64-gradients-vs-cpu "$out" "$rc"
    echo "$name: rc $rc, float64 gradients after 3 steps vs CPU: worst error $(field "$out" compare_worst_error)"
  done
  local out=$dir/mlp64.out rc=0
  if ! late mlp64; then
    timeout "$tmo" "$run" "$dir/mlp64.json" --grad-check=32 --json > "$out" 2>&1 || rc=$?
    record mlp64 grad-check "$out" "$rc"
    echo "mlp64 grad-check: rc $rc $(cat "$out")"
  fi
  # Out of device memory is a clear error: a cap at half the peak.
  out=$dir/oom.out rc=0
  if [[ -f $dir/mlp-none.json ]] && ! late oom; then
    local cap
    cap=$(( $(field "$dir/mlp-none.json" predicted_peak_bytes) / 2 ))
    timeout "$tmo" "$run" "$dir/mlp-none.json" --steps=1 --memory-cap=$cap > "$out" 2>&1 || rc=$?
    entries+=("{\"name\": \"oom\", \"kind\": \"out-of-memory\", \"rc\": $rc, \"message\": \"$(tr -d '"\\' < "$out" | tail -1 | cut -c1-300)\"}")
    flush
    echo "out of memory at cap $cap: rc $rc: $(tail -1 "$out")"
  fi
  # Last, the slowest items: matmuls as one thread per output element, and
  # reductions as one thread per output, to time the tiled and block
  # kernels against.
  for m in $MODELS; do
    for v in naive rowthread tile8; do
      local name=$m-$v out=$dir/$m-$v.out rc=0
      late "$name" && continue
      timeout "$tmo" "$run" "$dir/$name.json" --steps=10 --json > "$out" 2>&1 || rc=$?
      record "$name" $v-kernels "$out" "$rc"
      echo "$name: rc $rc, step ms $(field "$out" median_step_ms), device ms $(field "$out" median_device_ms)"
    done
  done
  # Where the time goes: the slowest kernels of each example's step.
  if [[ -z ${GPU_CHECK_NO_PROFILE:-} ]]; then
    for m in $MODELS; do
      late "$m-profile" && continue
      echo "== $m-none kernel profile"
      timeout "$tmo" "$run" "$dir/$m-none.json" --steps=3 \
        --profile-kernels=12 2>&1 | grep -A14 "^kernel profile" || true
    done
  fi
  flush
  echo "gpu-check: results in $result after $((SECONDS - start)) s"
}

case ${1:-} in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  report) shift; exec /usr/bin/python3 bench/gpu-report.py "$@" ;;
  *) echo "usage: utils/gpu-check.sh prepare [BUNDLE] | run [BUNDLE] [RESULT] | report RESULT" >&2; exit 2 ;;
esac
