#!/usr/bin/python3
"""Compiles and runs the example CNNs and transformer without and with remat.

For each model in examples/ (resnet, unet, gpt) at its committed size: the
no-remat build and builds at 75% and 50% of its peak, each run for --steps
SGD steps on the CPU, side by side in one run. Prints, per build, the
predicted and measured peak, whether losses and final parameters are bitwise
identical to the no-remat build, the predicted extra compute, the median
step time relative to the no-remat build and the compile time. Writes the
table as markdown next to --out (JSON).

usage: bench/examples-bench.py [--build build] [--steps 5]
                               [--out bench/results/examples-cpu.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--models", default="resnet,unet,gpt")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 "examples-cpu.json"))
    a = p.parse_args()
    bin_ = os.path.join(a.build, "bin")
    tmp = tempfile.mkdtemp()
    rows, failed = [], False
    for model in a.models.split(","):
        src = os.path.join(ROOT, "examples", model + ".mlir")
        base = None
        for limit in ("none", "75%", "50%"):
            so = os.path.join(tmp, f"{model}-{limit.rstrip('%')}.so")
            cmd = [os.path.join(bin_, "remat-compile"), src, "-o", so]
            if limit != "none":
                cmd.append(f"--memory-limit={limit}")
            t0 = time.perf_counter()
            c = subprocess.run(cmd, capture_output=True, text=True)
            compile_s = time.perf_counter() - t0
            if c.returncode:
                print(f"{model} {limit}: compile failed:\n{c.stderr}", file=sys.stderr)
                failed = True
                continue
            r = subprocess.run([os.path.join(bin_, "remat-run"),
                                so[:-3] + ".json", f"--steps={a.steps}", "--json"],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{model} {limit}: run failed:\n{r.stderr}", file=sys.stderr)
                failed = True
                continue
            out = json.loads(r.stdout)
            if base is None:
                base = out
            row = {
                "model": model, "limit": limit,
                "limit_bytes": out["memory_limit_bytes"],
                "predicted_peak": out["predicted_peak_bytes"],
                "measured_peak": out["measured_peak_bytes"],
                "peak_vs_base": out["measured_peak_bytes"] / base["measured_peak_bytes"],
                "identical": out["losses"] == base["losses"]
                and out["params_fnv1a"] == base["params_fnv1a"],
                "loss_first": out["losses"][0], "loss_last": out["losses"][-1],
                "predicted_overhead": out["predicted_overhead"],
                "median_step_ms": out["median_step_ms"],
                "time_vs_base": out["median_step_ms"] / base["median_step_ms"],
                "compile_s": compile_s,
            }
            failed |= not row["identical"] or row["predicted_peak"] != row["measured_peak"]
            rows.append(row)

    lines = ["| model | limit | predicted peak (B) | measured peak (B) | peak vs none "
             "| losses+params identical | loss first -> last | predicted compute "
             "| step time vs none | compile (s) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['limit']} | {r['predicted_peak']} | {r['measured_peak']} "
            f"| {r['peak_vs_base']:.3f} | {'yes' if r['identical'] else 'NO'} "
            f"| {r['loss_first']:.4f} -> {r['loss_last']:.4f} "
            f"| {r['predicted_overhead']:.3f}x | {r['time_vs_base']:.3f}x "
            f"({r['median_step_ms']:.1f} ms) | {r['compile_s']:.1f} |")
    table = "\n".join(lines)
    print(table)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.splitext(a.out)[0] + ".md", "w") as f:
        f.write(f"Printed by `bench/examples-bench.py --steps {a.steps}` "
                f"({a.steps} SGD steps per build, CPU):\n\n{table}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
