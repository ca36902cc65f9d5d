#!/usr/bin/env bash
# One GPU lease, two commands (the GPU machine has no MLIR, and device time
# is short):
#
#   utils/gpu-session.sh prepare            # here, after ./utils/build.sh
#   utils/gpu-session.sh run OUT_DIR        # there, from the repository root
#
# prepare runs `utils/gpu-check.sh prepare` and `bench/torch-gpu.py prepare`
# (about 8 minutes on 2 cores) and packs both bundles into
# build/device/bundles.tgz (about 25 MB: carry build/device). run unpacks
# it, runs `utils/gpu-check.sh run` (about 40 s on an H200) and
# `bench/torch-gpu.py run` (about 25 s) and writes gpu-check.json,
# gpu-check.log, torch-gpu.json and torch-gpu.log to OUT_DIR. Turn the
# first into tables with `utils/gpu-check.sh report OUT_DIR/gpu-check.json`
# (docs/GPU.md shows what a run gives).
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=${GPU_SESSION_MODELS:-mlp,gpt,gpt512,resnet18,unet,mobilenet_v2}

case ${1:-} in
  prepare)
    utils/gpu-check.sh prepare
    rm -rf build/torch-gpu
    /usr/bin/python3 bench/torch-gpu.py prepare --models "$MODELS"
    mkdir -p build/device
    tar czf build/device/bundles.tgz build/gpu-bundle build/torch-gpu
    echo "gpu-session: carry build/device ($(du -sh build/device | cut -f1))"
    ;;
  run)
    out=${2:?usage: utils/gpu-session.sh run OUT_DIR}
    mkdir -p "$out"
    tar xzf build/device/bundles.tgz
    GPU_CHECK_DEADLINE=${GPU_CHECK_DEADLINE:-170} GPU_CHECK_TIMEOUT=45 \
      utils/gpu-check.sh run build/gpu-bundle "$out/gpu-check.json" 2>&1 |
      tee "$out/gpu-check.log"
    PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch-gpu.py run \
      --bundle build/torch-gpu \
      --remat-run build/gpu-bundle/runtime-build/bin/remat-run \
      --repeats 10 --out "$out/torch-gpu.json" 2>&1 | tee "$out/torch-gpu.log"
    ;;
  *)
    echo "usage: utils/gpu-session.sh prepare | run OUT_DIR" >&2
    exit 2
    ;;
esac
