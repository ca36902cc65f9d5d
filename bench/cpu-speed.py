#!/usr/bin/python3
"""Remat's CPU step beside PyTorch eager's, model by model, and where
Remat's time goes.

For each model (float32, no memory limit): PyTorch eager's training step
(forward, cross-entropy, backward, SGD update; torch.set_num_threads(N))
and Remat's build of the same exported model (remat-run with
OPENBLAS_NUM_THREADS=N and REMAT_NUM_THREADS=N, the exported weights and
data), at each thread count, in interleaved rounds; each figure is the
fastest step of a run after the first (the least disturbed), median of the
rounds, and the spread is half the range of PyTorch's rounds. Remat's
build runs once per --layouts value (--cpu-conv-layout: auto, the
default, and blocked, oneDNN's fastest layouts with operand copies in the
convolutions' workspace; the same build for models without
convolutions). Then Remat's
time by op kind, from a profiling build (remat-compile --profile-ops,
remat-run --profile, one thread): the kinds that take most of the step.

Models: the zoo at bench/arena.py's shapes (zoo_*), and at the sizes of
bench/torch-side-by-side.py (gpt, gpt512, resnet18, mobilenet_v2, ...).

usage: bench/cpu-speed.py [--models zoo_gpt,resnet18,...] [--threads 1,2]
       [--layouts auto,blocked] [--rounds 3] [--min-ms 300] [--build build]
"""

import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
arena = __import__("arena")
import bench_modules  # noqa: E402
import remat_export  # noqa: E402
import zoo  # noqa: E402

side = bench_modules.side_by_side()


def table():
    """name -> (builder, input shape, vocab)"""
    models = {name: (lambda n=n: getattr(zoo, n)(), shape, vocab)
              for name, (n, shape, vocab) in arena.ZOO.items()}
    for name, (builder, shape, vocab, _) in side.models().items():
        models[name] = (builder, shape, vocab)
    return models


def torch_steps(module, x, y, steps, threads):
    """Step times (ms) of eager forward, loss, backward and SGD update."""
    torch.set_num_threads(threads)
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        side.loss_fn(module, x, y).backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def remat_steps(build, manifest, inputs, steps, threads, extra=()):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               REMAT_NUM_THREADS=str(threads))
    r = subprocess.run([f"{build}/bin/remat-run", str(manifest),
                        f"--steps={steps}", "--json", f"--inputs-dir={inputs}",
                        *extra], env=env, check=True, capture_output=True,
                       text=True)
    return json.loads(r.stdout)["step_ms"]


def by_kind(profile):
    """Share of the timed step per op kind, largest first."""
    totals = {}
    for op in profile["ops"]:
        kind = op["op"].removeprefix("train.")
        totals[kind] = totals.get(kind, 0) + op["calls"] * op["ns"]
    whole = sum(totals.values()) or 1
    return sorted(((k, v / whole) for k, v in totals.items()),
                  key=lambda kv: -kv[1])


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    models = table()
    p.add_argument("--models", default="zoo_mlp,zoo_small_resnet,zoo_gpt,"
                   "zoo_transformer_encoder,gpt,resnet18,mobilenet_v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--layouts", default="auto,blocked")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-ms", type=float, default=300)
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    unknown = [m for m in a.models.split(",") if m not in models]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; known: "
                f"{', '.join(models)}")
    layouts = a.layouts.split(",")
    print("| model | threads | PyTorch ms (spread) | "
          + " | ".join(f"Remat ms ({l}) | Remat / PyTorch ({l})"
                       for l in layouts)
          + " | Remat's time by op kind (1 thread) |")
    print("|---|---|---|" + "---|---|" * len(layouts) + "---|")
    with tempfile.TemporaryDirectory(prefix="remat-cpu-speed.") as tmp:
        for name in a.models.split(","):
            builder, shape, vocab = models[name]
            torch.manual_seed(0)
            module = builder().train()
            x, y = side.make_data(shape, vocab, module)
            out = pathlib.Path(tmp) / name
            remat_export.export_to(module, x, y, "cross_entropy", str(out))
            builds = [(f"step-{l}", ["--cpu-conv-library",
                                     f"--cpu-conv-layout={l}"])
                      for l in layouts]
            for tag, flags in builds + [("profiled", ["--profile-ops"])]:
                subprocess.run([f"{a.build}/bin/remat-compile",
                                str(out / "model.mlir"), "-o",
                                str(out / f"{tag}.so"), *flags],
                               check=True, capture_output=True)
            first = remat_steps(a.build, out / f"step-{layouts[0]}.json", out,
                                2, 1)[-1]
            steps = max(3, 1 + math.ceil(a.min_ms / max(first, 1e-3)))
            remat_steps(a.build, out / "profiled.json", out, steps, 1,
                        [f"--profile={out / 'profile.json'}"])
            kinds = by_kind(json.load(open(out / "profile.json")))
            breakdown = ", ".join(f"{k} {100 * s:.0f}%" for k, s in kinds[:5])
            for n in threads:
                t_torch, t_remat = [], {l: [] for l in layouts}
                for _ in range(a.rounds):
                    t_torch.append(min(torch_steps(module, x, y, steps, n)[1:]))
                    for l in layouts:
                        t_remat[l].append(min(remat_steps(
                            a.build, out / f"step-{l}.json", out, steps,
                            n)[1:]))
                pt = statistics.median(t_torch)
                spread = (max(t_torch) - min(t_torch)) / pt
                cells = []
                for l in layouts:
                    rm = statistics.median(t_remat[l])
                    cells.append(f"{rm:.1f} | {rm / pt:.2f}x")
                print(f"| {name} | {n} | {pt:.1f} (±{50 * spread:.0f}%) | "
                      + " | ".join(cells)
                      + f" | {breakdown if n == threads[0] else ''} |",
                      flush=True)


if __name__ == "__main__":
    main()
