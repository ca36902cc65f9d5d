#!/usr/bin/python3
"""Calibrates the roofline cost model on this machine: compiles a few MLPs
(examples/gen-mlp.py) whose time goes to matrix products, to elementwise
loops, or to per-op overhead, runs each (median of interleaved rounds,
OPENBLAS_NUM_THREADS=1), and fits the four rates of a target description
(contraction and loop GFLOP/s, bandwidth, per-op overhead) to the measured
step times, least squares in relative error. Writes the description as
JSON (remat-compile --cost-model=roofline --target-desc=FILE) and prints
each model's measured and predicted time.

usage: bench/calibrate.py [-o target.json] [--name cpu] [--rounds 3]
       [--build build]
"""

import argparse
import itertools
import json
import math
import os
import pathlib
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
# (layers, width, batch): contraction bound, loop bound, overhead bound.
MODELS = [(2, 512, 512), (3, 256, 1024), (4, 64, 4096), (8, 32, 2048),
          (16, 8, 64), (24, 4, 16)]
# A description that prices one component per op: nanoseconds equal to its
# contraction FLOPs, loop FLOPs or bytes (the other rates out of reach).
HUGE = 1e12
PROBES = {"contraction": (1, HUGE, HUGE), "loop": (HUGE, 1, HUGE),
          "bytes": (HUGE, HUGE, 1)}


def components(build, src, tmp):
    """Per op: (contraction FLOPs, loop FLOPs, bytes)."""
    parts = {}
    for what, (c, l, b) in PROBES.items():
        desc = tmp / f"{what}.json"
        desc.write_text(json.dumps({"name": what, "contraction_gflops": c,
                                    "loop_gflops": l, "bandwidth_gbs": b,
                                    "op_overhead_us": 0}))
        graph = tmp / f"{src.stem}-{what}.graph.json"
        subprocess.run([f"{build}/bin/remat-compile", str(src), "--emit=graph",
                        "--cost-model=roofline", f"--target-desc={desc}",
                        "-o", str(graph)], check=True, capture_output=True)
        nodes = [n for n in json.load(open(graph))["nodes"]
                 if not n.get("argument") and "cost_cpu" in n]
        parts[what] = [n["cost_cpu"] for n in nodes]
    return list(zip(parts["contraction"], parts["loop"], parts["bytes"]))


def predict(ops, rates):
    rc, rl, bw, ov = rates  # per ns
    return sum(max(c / rc + l / rl, b / bw) + ov for c, l, b in ops) * 1e-6


def fit(data):
    """Rates minimizing the squared relative error, by a shrinking search
    in log space from a coarse start."""
    def loss(r):
        return sum((predict(ops, r) / t - 1) ** 2 for ops, t in data)
    best = (10.0, 1.0, 5.0, 1000.0)  # GFLOP/s, GFLOP/s, GB/s, ns
    step = 2.0
    while step > 1.01:
        improved = True
        while improved:
            improved = False
            for k, f in itertools.product(range(4), (step, 1 / step)):
                r = list(best)
                r[k] *= f
                if loss(r) < loss(best):
                    best, improved = tuple(r), True
        step = math.sqrt(step)
    return best, loss(best)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="target.json")
    p.add_argument("--name", default="cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", REMAT_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="remat-calibrate.") as tmp:
        tmp = pathlib.Path(tmp)
        built = []
        for layers, width, batch in MODELS:
            src = tmp / f"mlp-{layers}x{width}x{batch}.mlir"
            subprocess.run(["/usr/bin/python3", str(ROOT / "examples" / "gen-mlp.py"),
                            "--layers", str(layers), "--width", str(width),
                            "--batch", str(batch), "-o", str(src)], check=True)
            subprocess.run([f"{a.build}/bin/remat-compile", str(src), "-o",
                            str(src.with_suffix(".so"))], check=True,
                           capture_output=True)
            built.append((src, components(a.build, src, tmp)))
        times = {src: [] for src, _ in built}
        for _ in range(a.rounds):
            for src, _ in built:
                r = subprocess.run([f"{a.build}/bin/remat-run",
                                    str(src.with_suffix(".json")), "--steps=3",
                                    "--json"], env=env, check=True,
                                   capture_output=True, text=True)
                times[src].append(min(json.loads(r.stdout)["step_ms"][1:]))
        data = [(ops, statistics.median(times[src])) for src, ops in built]
        rates, loss = fit(data)
    desc = {"name": a.name, "contraction_gflops": round(rates[0], 3),
            "loop_gflops": round(rates[1], 3), "bandwidth_gbs": round(rates[2], 3),
            "op_overhead_us": round(rates[3] / 1000, 4)}
    with open(a.output, "w") as f:
        json.dump(desc, f, indent=1)
        f.write("\n")
    print("| model | measured ms | predicted ms | error |")
    print("|---|---|---|---|")
    for (src, ops), (_, t) in zip(built, data):
        pred = predict(ops, rates)
        print(f"| {src.stem} | {t:.3f} | {pred:.3f} | {100 * (pred / t - 1):+.1f}% |")
    print(f"\n{json.dumps(desc)} (written to {a.output}; rms relative error "
          f"{100 * math.sqrt(loss / len(data)):.1f}%)")


if __name__ == "__main__":
    main()
