#!/usr/bin/python3
"""What time granted beyond auto's default search buys (remat-solve
--search-seconds): on every benchmark graph, at the budgets of the last
solver sweep (bench/results/sweep.json) where auto's extra compute is
furthest above the best lower bound, auto with its default search and with
each granted time, side by side in one run. Prints a table and writes
bench/results/search.json and search.md.

usage: bench/solver-search.py [--build build] [--seconds 1,5] [--budgets 4]
       [--repeat 3] [--graphs PREFIX,...]

The lower bound is the sweep's best at that budget (bench/solver-sweep.py
explains it); "gap closed" is the share of auto's default distance from it
that the granted time removes (of the median run). The annealing search is
timed: its answer depends on how many of its cycles fit in the time, so
on the machine and on what else runs; each granted time runs --repeat
times, and the table gives the median and the range.
"""
import argparse
import json
import os
import statistics
import sys

from bench_modules import solver_sweep

sweep = solver_sweep()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(sweep.ROOT, "build"))
    p.add_argument("--seconds", default="1,5")
    p.add_argument("--budgets", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--graphs", default="")
    p.add_argument("--out", default=os.path.join(sweep.ROOT, "bench",
                                                 "results"))
    a = p.parse_args()
    seconds = [float(s) for s in a.seconds.split(",")]
    bin_dir = os.path.join(a.build, "bin")
    rows = json.load(open(os.path.join(a.out, "sweep.json")))
    graphs = sweep.graph_files(bin_dir, a.out, a.graphs)
    results = []
    head = ("| graph | budget / peak | bound | auto | " +
            " | ".join(f"auto +{s:g} s, median (range)" for s in seconds) +
            " | " +
            " | ".join(f"gap closed +{s:g} s" for s in seconds) + " |")
    lines = [head, "|" + "---|" * (4 + 2 * len(seconds))]
    print(head + "\n" + lines[1], flush=True)
    for name, path in graphs.items():
        mine = [r for r in rows if r["graph"] == name]
        bounds = sweep.envelope([(r["budget"], r["lower_bound_cost"])
                                 for r in mine
                                 if r.get("lower_bound_cost") is not None])
        # The budgets where auto is furthest above the bound.
        def distance(r):
            return (r["cost"] - bounds[r["budget"]]) / r["baseline_cost"]
        hard = sorted((r for r in mine if r["solver"] == "auto" and
                       r["feasible"] and r["budget"] in bounds and
                       distance(r) > 1e-9), key=distance, reverse=True)
        for r in sorted(hard[:a.budgets], key=lambda r: r["budget"]):
            b, base = r["budget"], r["baseline_cost"]
            bound = bounds[b] / base
            default = sweep.solve(bin_dir, path, b, "auto")
            granted = [[sweep.solve(bin_dir, path, b, "auto",
                                    extra=[f"--search-seconds={s}"])
                        for _ in range(a.repeat)] for s in seconds]
            for j in [default] + [j for runs in granted for j in runs]:
                if not j["feasible"]:
                    sys.exit(f"auto broke the budget on {name} at {b}")
            base = default["overhead"]
            runs = [sorted(j["overhead"] for j in js) for js in granted]
            medians = [statistics.median(o) for o in runs]
            closed = [(base - m) / (base - bound) if base > bound else 0.0
                      for m in medians]
            results.append({"graph": name, "budget": b,
                            "budget_fraction": r["budget_fraction"],
                            "bound_overhead": bound, "overhead": base,
                            "solve_ms": default["solve_ms"],
                            "granted": [{"seconds": s,
                                         "overheads": [j["overhead"]
                                                       for j in js],
                                         "solve_ms": [j["solve_ms"]
                                                      for j in js]}
                                        for s, js in zip(seconds, granted)]})
            line = (f"| {name} | {r['budget_fraction']:.3f} | {bound:.4f}x | "
                    f"{base:.4f}x | " +
                    " | ".join(f"{m:.4f}x ({o[0]:.3f}-{o[-1]:.3f})"
                               for m, o in zip(medians, runs)) + " | " +
                    " | ".join(f"{c:.0%}" for c in closed) + " |")
            lines.append(line)
            print(line, flush=True)
    with open(os.path.join(a.out, "search.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.out, "search.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
