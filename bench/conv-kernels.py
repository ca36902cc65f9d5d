#!/usr/bin/python3
"""The CPU target's convolution code paths side by side.

For each CNN (the committed examples/resnet.mlir and examples/unet.mlir, and
a depthwise ResNet generated at the ResNet example's size), compiles the
step five ways: oneDNN (--cpu-conv-library) with --cpu-conv-layout=auto,
plain and blocked, the runtime's own kernels (the default) and the scalar loop nests
(--cpu-conv-kernels=false). Runs the builds alternately, --rounds times
--steps SGD steps each, so that all see the same machine. Prints, per model
and build, the median step time, its speedup over the loops, the predicted
peak (oneDNN's workspace is planned memory), whether the measured peak
equals it, and whether the kernels' first loss equals the loops' bit for
bit. Writes the table as markdown next to --out (JSON).

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
    builds = (("onednn-auto", ["--cpu-conv-library"]),
              ("onednn-plain", ["--cpu-conv-library",
                                "--cpu-conv-layout=plain"]),
              ("onednn-blocked", ["--cpu-conv-library",
                                  "--cpu-conv-layout=blocked"]),
              ("kernels", []),
              ("loops", ["--cpu-conv-kernels=false"]))
    rows = []
    for name, src in models.items():
        manifests = {}
        for build, flags in builds:
            so = os.path.join(tmp, f"{name}-{build}.so")
            run([os.path.join(bin_dir, "remat-compile"), src, "-o", so] + flags)
            manifests[build] = so[:-3] + ".json"
        times = {build: [] for build, _ in builds}
        last = {}
        for _ in range(a.rounds):
            for build, _ in builds:
                out = json.loads(run([os.path.join(bin_dir, "remat-run"),
                                      manifests[build], f"--steps={a.steps}",
                                      "--json"]))
                times[build] += out["step_ms"]
                last[build] = out
        loops = statistics.median(times["loops"])
        for build, _ in builds:
            ms = statistics.median(times[build])
            row = {"model": name, "build": build, "median_ms": ms,
                   "speedup": loops / ms,
                   "predicted_peak_bytes": last[build]["predicted_peak_bytes"],
                   "peak_ok": (last[build]["measured_peak_bytes"] ==
                               last[build]["predicted_peak_bytes"])}
            if build == "kernels":
                row["same_first_loss"] = (last[build]["losses"][0] ==
                                          last["loops"]["losses"][0])
            rows.append(row)
            print(f"{name} {build}: {ms:.1f} ms, {loops / ms:.2f}x the loops, "
                  f"peak {row['predicted_peak_bytes']}", flush=True)
    lines = [f"Printed by `bench/conv-kernels.py --steps {a.steps} --rounds "
             f"{a.rounds}` (CPU; the builds of each model run alternately; "
             "first loss: the kernels' against the loops', bit for bit):",
             "",
             "| model | build | median step | vs loops | predicted peak "
             "| measured == predicted | first loss equal |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        same = r.get("same_first_loss")
        lines.append(
            f"| {r['model']} | {r['build']} | {r['median_ms']:.1f} ms | "
            f"{r['speedup']:.2f}x | {r['predicted_peak_bytes']:,} | "
            f"{'yes' if r['peak_ok'] else 'no'} | "
            f"{'' if same is None else 'yes' if same else 'no'} |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    open(os.path.splitext(a.out)[0] + ".md", "w").write(text)
    return 0 if all(r["peak_ok"] and r.get("same_first_loss", True)
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
