#!/usr/bin/python3
"""How far the windows' cost bound (remat-solve --bound=windows) takes the
proof of auto's answers: at every budget of the last solver sweep
(bench/results/sweep.json) where auto's answer is above the sweep's best
lower bound, remat-solve runs auto again with the windows' bound, and the
table sets the two bounds side by side: auto's extra compute as a multiple
of each bound's (1.000 = proven optimal, at most 1.05 = within the issue's
5% of the optimum's extra compute). Writes bench/results/bound.json and
bound.md.

usage: bench/solver-bound.py [--build build] [--graphs PREFIX,...]

The windows' bound takes seconds on Checkmate's ResNet50 and Moccasin's
n1000 (bound_ms in the table); auto's answer is the sweep's (the run checks
that it is the same). A bound at a larger budget holds at a smaller one
too, so each column is the best over the budgets at or above it
(solver-sweep.py's envelope).
"""
import argparse
import json
import os
import sys

from bench_modules import solver_sweep

sweep = solver_sweep()

WITHIN = 1.05


def ratio(cost, bound, base):
    """Auto's extra compute as a multiple of the bound's (1 where both are
    none)."""
    extra, least = cost - base, bound - base
    if extra <= 1e-9 * base:
        return 1.0
    return extra / least if least > 0 else float("inf")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(sweep.ROOT, "build"))
    p.add_argument("--graphs", default="")
    p.add_argument("--out", default=os.path.join(sweep.ROOT, "bench",
                                                 "results"))
    a = p.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    rows = json.load(open(os.path.join(a.out, "sweep.json")))
    swept = list(dict.fromkeys(r["graph"] for r in rows))
    graphs = sweep.graph_files(bin_dir, a.out, ",".join(
        sweep.pick(swept, a.graphs)))
    results = []
    head = ("| graph | budget / peak | auto | moments' bound | windows' bound "
            "| auto's extra / bound's, moments | windows | windows' bound "
            "ms |")
    lines = [head, "|" + "---|" * 8]
    summary = ["| graph | budgets | proven optimal, moments | windows "
               "| within 5%, moments | windows | slowest bound ms |",
               "|" + "---|" * 7]
    print(head + "\n" + lines[1], flush=True)
    for name, path in graphs.items():
        mine = [r for r in rows if r["graph"] == name]
        autos = sorted((r for r in mine if r["solver"] == "auto"),
                       key=lambda r: r["budget"])
        moments = sweep.envelope([(r["budget"], r["lower_bound_cost"])
                                  for r in mine
                                  if r.get("lower_bound_cost") is not None])
        windows = {}
        slowest = 0.0
        for r in autos:
            b = r["budget"]
            if not r["feasible"] or b not in moments:
                continue
            if r["cost"] <= moments[b] * (1 + 1e-12):
                continue  # proven optimal already
            j = sweep.solve(bin_dir, path, b, "auto", extra=["--bound=windows"])
            if j["cost"] != r["cost"]:
                sys.exit(f"auto answered {j['cost']} on {name} at {b}, "
                         f"the sweep {r['cost']}")
            windows[b] = (j["lower_bound_cost"], j["bound_ms"])
            slowest = max(slowest, j["bound_ms"])
        best = sweep.envelope([(b, v) for b, v in moments.items()] +
                              [(b, v) for b, (v, _) in windows.items()])
        counts = [0, 0, 0, 0]
        feasible = 0
        for r in autos:
            b, base = r["budget"], r["baseline_cost"]
            if not r["feasible"] or b not in moments:
                continue
            feasible += 1
            old = ratio(r["cost"], moments[b], base)
            new = ratio(r["cost"], best[b], base)
            counts[0] += old <= 1 + 1e-9
            counts[1] += new <= 1 + 1e-9
            counts[2] += old <= WITHIN
            counts[3] += new <= WITHIN
            if b not in windows:
                continue
            ms = windows[b][1]
            results.append({"graph": name, "budget": b,
                            "budget_fraction": r["budget_fraction"],
                            "overhead": r["overhead"],
                            "moments_bound_overhead": moments[b] / base,
                            "windows_bound_overhead": best[b] / base,
                            "windows_bound_ms": ms,
                            "ratio_moments": old, "ratio_windows": new})
            line = (f"| {name} | {r['budget_fraction']:.3f} | "
                    f"{r['overhead']:.4f}x | {moments[b] / base:.4f}x | "
                    f"{best[b] / base:.4f}x | {old:.3f} | {new:.3f} | "
                    f"{ms:.0f} |")
            lines.append(line)
            print(line, flush=True)
        summary.append(f"| {name} | {feasible} | {counts[0]} | {counts[1]} | "
                       f"{counts[2]} | {counts[3]} | {slowest:.0f} |")
    print("\n" + "\n".join(summary))
    with open(os.path.join(a.out, "bound.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.out, "bound.md"), "w") as f:
        f.write("\n".join(lines) + "\n\n" + "\n".join(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
