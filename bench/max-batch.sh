#!/usr/bin/env bash
# The largest batch whose training step fits a 16 GiB and an 80 GiB GPU's
# memory, per solver, by the compiler's plan (python/remat/_batch.py):
# VGG16 and ResNet-18 at 224 x 224, the zoo's GPT (python/zoo.py, 2 layers,
# width 32, 16 tokens). Float32, SGD. Output: a Markdown table per model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH=$root/python
py=${PYTHON:-/usr/bin/python3}
$py -m remat max-batch vgg16 --input-shape 3,224,224 --memory 16GiB,80GiB
echo
$py -m remat max-batch resnet18 --input-shape 3,224,224 --memory 16GiB,80GiB
echo
$py -m remat max-batch gpt --input-shape 16 --input-dtype i64 --vocab 64 \
  --memory 16GiB,80GiB
