#!/usr/bin/python3
"""The CPU target's convolution kernels against the loop nests they replace.

For each CNN (the committed examples/resnet.mlir and examples/unet.mlir, and
a depthwise ResNet generated at the ResNet example's size), compiles the
step with the kernels (the default) and with --cpu-conv-kernels=false, then
runs the two builds alternately, --rounds times --steps SGD steps each, so
that both see the same machine. Prints, per model, the median step time of
each build and their ratio, whether the first losses are bitwise identical
and whether both measured peaks equal the predicted one. Writes the table as
markdown next to --out (JSON).

usage: bench/conv-kernels.py [--build build] [--steps 3] [--rounds 3]
                             [--out bench/results/conv-kernels.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 "conv-kernels.json"))
    a = p.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    tmp = tempfile.mkdtemp(prefix="conv-kernels-")
    models = {"resnet": os.path.join(ROOT, "examples", "resnet.mlir"),
              "unet": os.path.join(ROOT, "examples", "unet.mlir")}
    dw = os.path.join(tmp, "resnet-depthwise.mlir")
    run([sys.executable, os.path.join(ROOT, "examples", "gen-resnet.py"),
         "--depthwise", "-o", dw])
    models["resnet-depthwise"] = dw
    rows = []
    for name, src in models.items():
        manifests = {}
        for build, flags in (("kernels", []),
                             ("loops", ["--cpu-conv-kernels=false"])):
            so = os.path.join(tmp, f"{name}-{build}.so")
            run([os.path.join(bin_dir, "remat-compile"), src, "-o", so] + flags)
            manifests[build] = so[:-3] + ".json"
        times = {"kernels": [], "loops": []}
        first = {}
        for _ in range(a.rounds):
            for build in ("kernels", "loops"):
                out = json.loads(run([os.path.join(bin_dir, "remat-run"),
                                      manifests[build], f"--steps={a.steps}",
                                      "--json"]))
                times[build] += out["step_ms"]
                first[build] = out
        row = {"model": name}
        for build in ("kernels", "loops"):
            row[f"{build}_median_ms"] = statistics.median(times[build])
            row[f"{build}_peak_ok"] = (first[build]["measured_peak_bytes"] ==
                                       first[build]["predicted_peak_bytes"])
        row["speedup"] = row["loops_median_ms"] / row["kernels_median_ms"]
        row["same_first_loss"] = (first["kernels"]["losses"][0] ==
                                  first["loops"]["losses"][0])
        rows.append(row)
        print(f"{name}: kernels {row['kernels_median_ms']:.1f} ms, loops "
              f"{row['loops_median_ms']:.1f} ms, {row['speedup']:.2f}x",
              flush=True)
    lines = [f"Printed by `bench/conv-kernels.py --steps {a.steps} --rounds "
             f"{a.rounds}` (CPU; the two builds of each model run "
             "alternately):", "",
             "| model | kernels: median step | loops: median step | speedup "
             "| first loss bitwise equal | measured == predicted peak |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['kernels_median_ms']:.1f} ms | "
            f"{r['loops_median_ms']:.1f} ms | {r['speedup']:.2f}x | "
            f"{'yes' if r['same_first_loss'] else 'no'} | "
            f"{'yes' if r['kernels_peak_ok'] and r['loops_peak_ok'] else 'no'}"
            " |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    open(os.path.splitext(a.out)[0] + ".md", "w").write(text)
    return 0 if all(r["same_first_loss"] and r["kernels_peak_ok"] and
                    r["loops_peak_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
