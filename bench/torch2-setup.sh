#!/bin/bash
# Makes a virtual environment with PyTorch 2.x from PyPI for
# bench/torch2-budget.py, kept apart from the project's own dependencies
# (Debian's torch 1.13 has no activation memory budget). Downloads about
# 3 GB (PyPI's Linux wheels bring their CUDA libraries; they run on the CPU).
#
# usage: bench/torch2-setup.sh [DIR]   (default build/torch2-venv)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/build/torch2-venv}"
# The versions the results in docs/ were measured with.
torch_version=2.5.1
torchvision_version=0.20.1
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  "torch==$torch_version" "torchvision==$torchvision_version" numpy
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'
