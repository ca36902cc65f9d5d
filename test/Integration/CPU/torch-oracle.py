#!/usr/bin/python3
"""Gradient oracle: PyTorch's autograd against Remat, model by model.

usage: torch-oracle.py --compile REMAT_COMPILE --run REMAT_RUN --out DIR
                       [MODEL...]

Each model of python/zoo.py is built in float64 with a fixed seed, exported
with python/remat_export.py (weights, input and labels included), compiled
with --return-gradients without a limit and at a limit below its peak, and run
for one step on the exported data. The loss and every parameter gradient
must match PyTorch's to a relative 1e-9 (float64; both sides sum in
different orders), and the remat build must match the plain build bit for
bit. Prints one line per model; exits non-zero if any fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import remat_export  # noqa: E402
import zoo  # noqa: E402

# name -> (module builder, input shape, a limit the model can meet, and the
# vocabulary when the input is token ids)
MODELS = {
    "mlp": (lambda: zoo.mlp(layers=6, width=32, classes=10), [256, 32], "75%", 0),
    "small_resnet": (lambda: zoo.small_resnet(width=4, classes=10),
                     [16, 3, 16, 16], "90%", 0),
    "unet": (lambda: zoo.unet(depth=2, width=4), [2, 3, 16, 16], "75%", 0),
    "gpt": (lambda: zoo.gpt(layers=2, width=32, heads=2, seq=16, vocab=64),
            [8, 16], "75%", 64),
    "transformer_encoder": (lambda: zoo.transformer_encoder(layers=2, width=32),
                            [8, 16, 32], "90%", 0),
    "lstm": (lambda: zoo.lstm(features=8, hidden=16, layers=2), [8, 12, 8], "90%", 0),
    # Layout ops of ATen capture: repeat, ceil_mode max pooling, pad, roll,
    # a strided slice, adaptive pooling to a size that does not divide.
    "layout": (lambda: _test_model("PoolsModel"), [8, 8], "auto10", 0),
    # Conditions, extrema, indexing and average pooling (see
    # Inputs/torch_models.py).
    "selects": (lambda: _test_model("SelectsModel"), [8, 8], "auto10", 0),
    "tokens": (lambda: _test_model("Tokens"), [4, 12], "auto10", 32),
    # Returned gradients double its 86 MiB of parameters: little to remove.
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10),
                 [8, 3, 64, 64], "97%", 0),
    # torchvision's VGG16 conv stack as is; at 32x32 it ends at 1x1, which
    # the adaptive pool replicates to 7x7. The classifier keeps its shape
    # (25088 inputs, two hidden layers) at 64 units instead of 4096 (its
    # first layer alone is 103M parameters); dropout off. Its 16M parameters
    # and their returned gradients leave little else to remove.
    "vgg16": (lambda: _vgg16_narrow(64), [8, 3, 32, 32], "99%", 0),
    # Its classifier's dropout draws PyTorch's random numbers: off here.
    "mobilenet_v2": (lambda: _without_dropout(
        torchvision.models.mobilenet_v2(num_classes=10)), [8, 3, 64, 64], "90%", 0),
}


def _vgg16_narrow(hidden):
    model = torchvision.models.vgg16(num_classes=10)
    model.classifier = torch.nn.Sequential(
        torch.nn.Linear(512 * 7 * 7, hidden), torch.nn.ReLU(True),
        torch.nn.Dropout(), torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(True), torch.nn.Dropout(), torch.nn.Linear(hidden, 10))
    return _without_dropout(model)


def _test_model(name):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "Inputs"))
    import torch_models
    return getattr(torch_models, name)()


def _without_dropout(module):
    for m in module.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return module
RTOL = 1e-9


def build(a, name, out, limit):
    src = os.path.join(out, "model.mlir")
    lib = os.path.join(out, f"{name}-{limit or 'base'}.so")
    cmd = [a.compile, "-O1", src, "-o", lib, "--return-gradients"]
    if limit:
        cmd.append(f"--memory-limit={limit}")
    c = subprocess.run(cmd, capture_output=True, text=True)
    if c.returncode:
        raise RuntimeError("compile failed: " + c.stderr.strip())
    grads = lib[:-3] + ".grads"
    r = subprocess.run([a.run, lib[:-3] + ".json", "--steps=1", "--json",
                        f"--inputs-dir={out}", f"--save-outputs={grads}"],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("run failed: " + r.stderr.strip())
    with open(lib[:-3] + ".json") as f:
        manifest = json.load(f)
    with open(grads, "rb") as f:
        raw = f.read()
    return json.loads(r.stdout), manifest, raw


def split_grads(manifest, raw):
    """Parameter name -> gradient array, from the manifest's result order."""
    params = [t["name"] for t in manifest["arguments"] if t["role"] == "param"]
    out, at = {}, 0
    for res in manifest["results"][1:]:
        n = int(np.prod(res["shape"])) if res["shape"] else 1
        data = np.frombuffer(raw, dtype=np.float64, count=n, offset=at)
        at += 8 * n
        out[params[res["param"]]] = data.reshape(res["shape"])
    return out


def sweep_limits(a, src, share=0.10):
    """Budgets of a sweep (bytes) by remat-solve on the step's graph: those
    whose predicted extra compute is at most `share`, lowest first; where
    every budget below the peak costs more, the feasible ones from the
    cheapest. The live model's budgets; the arena build may need a few
    more bytes for its fragmentation."""
    graph = src[:-5] + ".graph.json"
    c = subprocess.run([a.compile, src, "--return-gradients", "--emit=graph",
                        "-o", graph], capture_output=True, text=True)
    if c.returncode:
        raise RuntimeError("compile failed: " + c.stderr.strip())
    budgets = ",".join(f"{b / 100:.2f}x" for b in range(99, 4, -2))
    c = subprocess.run([os.path.join(os.path.dirname(a.compile), "remat-solve"),
                        graph, f"--budget={budgets}", "--json"],
                       capture_output=True, text=True)
    # Budgets below the smallest reachable peak are refusals, and make the
    # exit code non-zero; the answers are all printed.
    try:
        answers = json.loads(c.stdout)
    except ValueError:
        raise RuntimeError("remat-solve failed: " + c.stderr.strip())
    feasible = [r for r in answers if r["feasible"]]
    fits = sorted(r["budget_bytes"] for r in feasible if r["overhead"] <= 1 + share)
    if not fits:
        fits = [r["budget_bytes"] for r in sorted(feasible, key=lambda r: r["overhead"])]
    return [str(b) for b in fits]


def check_row(a, name):
    """One model against autograd: a dict of what was measured and 'errors',
    the reasons it fails (empty when it passes)."""
    builder, shape, limit, vocab = MODELS[name]
    torch.manual_seed(0)
    module = builder().double().train()
    if vocab:
        example = torch.randint(0, vocab, shape)
    else:
        example = torch.randn(shape, dtype=torch.float64)
    with torch.no_grad():
        logits = module(example)
    labels = torch.randint(0, logits.shape[-1], logits.shape[:1])
    out = os.path.join(a.out, name)
    row = {"exported": "yes", "errors": []}
    remat_export.export_to(module, example, labels, "cross_entropy", out)
    # Batch norm in training mode uses batch statistics: the runs above
    # change nothing the step reads.
    module.zero_grad()
    loss = torch.nn.functional.cross_entropy(module(example), labels)
    loss.backward()

    start = time.time()
    base, manifest, raw = build(a, name, out, None)
    row["compile_seconds"] = f"{time.time() - start:.1f}"
    grads = split_grads(manifest, raw)
    errors = row["errors"]
    ours = base["losses"][0]
    if abs(ours - loss.item()) > RTOL * abs(loss.item()):
        errors.append(f"loss {ours} vs PyTorch {loss.item()}")
    worst = 0.0
    # A gradient that is zero in exact arithmetic (a convolution bias before
    # a batch norm) is rounding noise on both sides: errors are relative to
    # the parameter's own gradient or to a 1e-3 share of the model's largest.
    largest = max(float(p.grad.abs().max()) for p in module.parameters())
    for pname, p in module.named_parameters():
        if pname not in grads:
            errors.append(f"no gradient for {pname}")
            continue
        ref = p.grad.numpy()
        scale = max(float(np.abs(ref).max()), 1e-3 * largest)
        err = float(np.abs(grads[pname] - ref).max()) / scale
        worst = max(worst, err)
        if err > RTOL:
            errors.append(f"gradient of {pname}: relative error {err:.3g} "
                          f"(largest entry {float(np.abs(ref).max()):.3g})")
    row.update(grads=len(grads), worst=worst, match=not errors,
               match_text=f"{'yes' if not errors else 'NO'} ({worst:.1e})")
    limits = [limit]
    if limit == "auto10":
        limits = sweep_limits(a, os.path.join(out, "model.mlir"))
        if not limits:
            row.update(bitwise=False, bitwise_text="no feasible limit below the peak",
                       peaks=f"{base['measured_peak_bytes']}")
            errors.append("no feasible limit below the peak")
            return row
    # The lowest of the first few budgets whose arena build fits.
    for limit in limits[:4]:
        try:
            remat, _, remat_raw = build(a, name, out, limit)
            break
        except RuntimeError as e:
            if "the arena plan needs" not in str(e):
                raise
            refused = e
    else:
        raise refused
    row["limit"] = limit
    row["bitwise"] = remat_raw == raw and remat["losses"] == base["losses"]
    if not row["bitwise"]:
        errors.append(f"the build at {limit} differs from the plain build")
    if remat["measured_peak_bytes"] >= base["measured_peak_bytes"]:
        errors.append(f"the build at {limit} does not lower the peak")
    row["bitwise_text"] = f"{'yes' if row['bitwise'] else 'NO'} (at {limit})"
    row["peaks"] = f"{base['measured_peak_bytes']} -> {remat['measured_peak_bytes']}"
    row["extra"] = f"{remat.get('predicted_overhead', 0):.3f}x"
    row["base_peak"], row["remat_peak"] = (base["measured_peak_bytes"],
                                           remat["measured_peak_bytes"])
    return row


def check(a, name):
    row = check_row(a, name)
    if row["errors"]:
        return f"{name}: FAILED: " + "; ".join(row["errors"])
    return (f"{name}: loss and {row['grads']} gradients match PyTorch (worst "
            f"relative error {row['worst']:.1e}); at {row['limit']}: peak "
            f"{row['base_peak']} -> {row['remat_peak']} bytes, bitwise identical")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--compile", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("models", nargs="*")
    a = p.parse_args()
    torch.set_num_threads(1)
    failed = 0
    for name in a.models or MODELS:
        try:
            line = check(a, name)
        except (RuntimeError, remat_export.ExportError) as e:
            line = f"{name}: FAILED: {e}"
        failed += "FAILED" in line
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
