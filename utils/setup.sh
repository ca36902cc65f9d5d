#!/usr/bin/env bash
# Installs the Debian packages Remat needs, when they are missing (with
# --with-torch, also PyTorch for the exporter's tests). Safe to run again:
# it only calls apt-get when something is absent.
set -euo pipefail

packages=(cmake ninja-build g++ python3 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
          libopenblas-dev libdnnl-dev libgtest-dev coinor-libcbc-dev libboost-dev pkg-config)
# The PyTorch exporter's and the Python API's tests (pytest), the digits
# example (scikit-learn's bundled data, matplotlib) and the side-by-side
# bench need PyTorch (about 1 GB); the demo does not.
if [ "${1:-}" = "--with-torch" ]; then
  packages+=(python3-torch python3-torchvision python3-networkx python3-numpy
             python3-pytest python3-sklearn python3-matplotlib)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
