#!/usr/bin/python3
"""Every classification model of the installed torchvision through Remat.

Each model is built in float64 (10 classes, seed 0, dropout and stochastic
depth off: their masks are not PyTorch's random numbers), exported at the
ATen level, compiled with --return-gradients without a limit and at the
lowest limit of a short sweep whose predicted extra compute is at most 10%,
run for one step on the exported data, and compared with PyTorch's autograd
(the loss and every parameter gradient, relative 1e-9), the remat build
against the plain one bit for bit. Prints a markdown table: model | exported
| compiled (seconds) | gradients match (worst relative error) | remat
bitwise equal | peak none -> remat | extra compute; a failure names the op,
the module path and the source line. A model whose parameters and their
gradients are its whole peak at --batch (no limit below the peak is
feasible) runs again at four, then sixteen times the batch.

usage: bench/torchvision-coverage.py [--build build] [--out DIR]
                                     [--models resnet18,vit_b_16 ...]
                                     [--skip densenet201 ...] [--batch 2]
                                     [--max-params 30e6]
"""
import argparse
import importlib.util
import os
import sys

import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location(
    "oracle", os.path.join(ROOT, "test", "Integration", "CPU", "torch-oracle.py"))
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)

# Input sizes: ViT at its own 224 x 224 (at 32 x 32 its 5 tokens leave the
# peak all parameters and gradients), MaxViT at 224 (its windows need it),
# Swin at 32, Inception at its least, 75; extra constructor arguments
# (auxiliary classifiers return more than the logits).
SIZES = {"vit": 224, "maxvit": 224, "swin": 32, "inception_v3": 75}
# Inception's last batch norms see 2 values a channel at batch 2 and 75 x 75;
# its gradients then differ from autograd's by 1.2e-8 (2.4e-11 at batch 4).
BATCHES = {"inception_v3": 4}
KWARGS = {"googlenet": dict(aux_logits=False, init_weights=True),
          "inception_v3": dict(aux_logits=False, init_weights=True)}
# Transformer code beside torchvision's (python/zoo.py): PyTorch's encoder
# layer, and a GPT whose attention is F.scaled_dot_product_attention
# (PyTorch 2): name -> (input shape, vocabulary or 0).
EXTRAS = {"transformer_encoder": ([4, 16, 32], 0), "gpt_sdpa": ([4, 16], 64)}


def builders():
    models = torchvision.models
    if hasattr(models, "list_models"):
        names = models.list_models(module=models)
    else:
        names = sorted(n for n, f in vars(models).items()
                       if callable(f) and n[0].islower() and not n.startswith("_")
                       and n not in ("get_weight", "get_model", "get_model_weights",
                                     "list_models", "get_model_builder")
                       and getattr(f, "__module__", "").startswith("torchvision.models.")
                       and f.__module__.count(".") == 2)
    return names


def make(name):
    kwargs = dict(num_classes=10)
    for prefix, extra in KWARGS.items():
        if name.startswith(prefix):
            kwargs.update(extra)
    model = getattr(torchvision.models, name)(**kwargs)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return model


def size_of(name):
    for prefix, s in SIZES.items():
        if name.startswith(prefix):
            return s
    return 64


def check(tools, name):
    """The oracle's row for a model; a failure anywhere is the row's text."""
    try:
        return oracle.check_row(tools, name)
    except Exception as e:  # a row per model, whatever fails
        return dict(exported=str(e).splitlines()[0][:300])


def report(name, row):
    """Prints the model's table row; returns whether it passes."""
    print(f"| {name} | {row.get('exported', 'yes')} | "
          f"{row.get('compile_seconds', '')} | {row.get('match_text', '')} | "
          f"{row.get('bitwise_text', '')} | {row.get('peaks', '')} | "
          f"{row.get('extra', '')} |", flush=True)
    return bool(row.get("match") and row.get("bitwise") and not row.get("errors"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default="/tmp/remat-coverage")
    p.add_argument("--models", default="")
    p.add_argument("--skip", default="")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--size", type=int, default=0,
                   help="input height and width for every model that takes "
                   "it (default 64; ViT 224, Swin 32, Inception 75)")
    p.add_argument("--max-params", type=float, default=30e6,
                   help="skip larger models (time, not memory: float64 "
                   "parameters and gradients of 30M fit easily)")
    a = p.parse_args()
    torch.set_num_threads(1)
    names = a.models.split(",") if a.models else builders() + list(EXTRAS)
    skip = set(a.skip.split(",")) if a.skip else set()

    class Tools:
        compile = os.path.join(a.build, "bin", "remat-compile")
        run = os.path.join(a.build, "bin", "remat-run")
        out = a.out

    print("| model | exported | compiled (s) | gradients match | remat bitwise "
          "equal | peak none -> remat | extra compute |")
    print("|---|---|---|---|---|---|---|")
    passed = tried = 0
    for name in names:
        if name in skip:
            continue
        if name in EXTRAS:
            shape, vocab = EXTRAS[name]
            try:
                builder = getattr(oracle.zoo, name)
                builder()
            except RuntimeError as e:
                print(f"| {name} | not available: {e} | | | | | |")
                continue
            oracle.MODELS[name] = (builder, shape, "auto10", vocab)
            tried += 1
            passed += report(name, check(Tools, name))
            continue
        s = a.size if a.size and name.split("_")[0] not in ("vit", "maxvit", "swin",
                                                            "inception") \
            else size_of(name)
        try:
            count = sum(p.numel() for p in make(name).parameters())
        except Exception as e:  # a builder that cannot build at 10 classes
            print(f"| {name} | cannot build: {str(e).splitlines()[0][:200]} | | | | | |")
            continue
        if count > a.max_params:
            print(f"| {name} | skipped: {count / 1e6:.0f}M parameters | | | | | |",
                  flush=True)
            continue
        # Where parameters and their gradients are the whole peak, no limit
        # lowers it: a larger batch gives the activations a share.
        first = BATCHES.get(name, a.batch)
        for batch in (first, 4 * first, 16 * first):
            oracle.MODELS[name] = (lambda n=name: make(n), [batch, 3, s, s], "auto10", 0)
            row = check(Tools, name)
            if "no feasible limit below the peak" not in row.get("errors", []):
                break
        if batch != a.batch:
            row["exported"] = f"yes (batch {batch})"
        tried += 1
        passed += report(name, row)
    print(f"\n{passed} of {tried} models tried pass")


if __name__ == "__main__":
    sys.exit(main())
