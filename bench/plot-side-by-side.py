#!/usr/bin/python3
"""Plots bench/torch-side-by-side.py's results: one panel per model.

x: the step's peak above its fixed part (MiB); y: extra work. Remat's
points are its `auto` schedules over the budget sweep, extra FLOPs as its
cost model predicts them; PyTorch's are eager and checkpoint-per-block,
extra step time as measured (eager is 0 by definition); checkpointing's
recomputation is also shown in Remat's cost model (hollow triangle), beside
Remat's lowest peak for no more (diamond). The y measures differ in kind,
as the legend says.

usage: bench/plot-side-by-side.py [RESULTS.json] [-o OUT.png]
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("results", nargs="?",
                   default=os.path.join(ROOT, "bench", "results",
                                        "torch-side-by-side.json"))
    p.add_argument("-o", "--output",
                   default=os.path.join(ROOT, "bench", "results",
                                        "torch-side-by-side.png"))
    a = p.parse_args()
    rows = json.load(open(a.results))
    mib = 2 ** 20
    cols = min(4, len(rows))
    grid = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(grid, cols, figsize=(4.2 * cols, 3.6 * grid),
                             squeeze=False)
    axes = axes.flatten()
    for ax in axes[len(rows):]:
        ax.axis("off")
    for ax, r in zip(axes, rows):
        fixed = r["remat_fixed_bytes"]
        pts = sorted(r["remat_points"], key=lambda q: q["peak_bytes"])
        ax.plot([(q["peak_bytes"] - fixed) / mib for q in pts],
                [100 * (q["overhead"] - 1) for q in pts], "o-", ms=3,
                label="Remat auto (predicted extra FLOPs)")
        ax.plot([r["eager_peak"] / mib], [0], "ks", label="PyTorch eager")
        ax.plot([r["checkpoint_peak"] / mib],
                [100 * (r["checkpoint_time_ratio"] - 1)], "r^",
                label="PyTorch checkpoint/block (measured extra time)")
        q = r["remat_at_checkpoint_peak"]
        if q["feasible"] and r["remat_at_checkpoint_peak_time_ratio"]:
            ax.plot([(q["peak_bytes"] - fixed) / mib],
                    [100 * (r["remat_at_checkpoint_peak_time_ratio"] - 1)], "gv",
                    label="Remat at that peak (measured extra time)")
        if "checkpoint_extra_compute" in r:
            ax.plot([r["checkpoint_peak"] / mib],
                    [100 * r["checkpoint_extra_compute"]], "r^", mfc="none",
                    label="checkpoint/block's recomputation (cost model)")
            q = r["remat_at_checkpoint_extra"]
            ax.plot([(q["peak_bytes"] - fixed) / mib],
                    [100 * (q["overhead"] - 1)], "mD", ms=5,
                    label="Remat within that (predicted extra FLOPs)")
        ax.set_title(r["model"])
        ax.set_xlabel("step peak above parameters and inputs (MiB)")
        ax.set_ylim(-10, 120)
        ax.grid(alpha=0.3)
    for ax in axes[::cols]:
        ax.set_ylabel("extra work (%)")
    axes[0].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
