#!/usr/bin/python3
"""Two builds of remat-solve side by side: at every budget of the last
solver sweep (bench/results/sweep.json), auto's answer from each, in
alternation, so that both see the same machine. Prints per graph how many
answers are cheaper, dearer or the same (cost, and the schedule itself),
and the solve times (median and worst of each, and the median of the
per-budget ratio B / A), then every budget whose answer differs. For
checking that a change meant to be faster
leaves every answer as it was, or what a change to the search buys and
costs.

With --bound=moments or --bound=windows it compares the graph's cost bound
instead (remat-solve --solver=none --bound=...): how many budgets get a
higher, lower or the same bound (within 1e-12 of it: a change in the
order of floating-point additions moves the last bits), and the bound's
times (bound_ms).

usage: bench/solver-ab.py A/remat-solve B/remat-solve
       [--graphs NAME|PREFIX,...] [--repeat 1] [--bound KIND] [--grid N]
       [--out FILE.md]

--graphs picks graphs of the sweep by exact name or name prefix (default:
all but Moccasin's n500 and n1000, whose solves take seconds); --repeat
runs each budget that many times per build and keeps the least time of
each (the answers must agree from run to run); --grid N compares at N
budgets per graph evenly spaced from the smallest one A's auto reaches to
the no-remat peak (bench/solver-scan.py's grid) instead of the sweep's.
"""
import argparse
import json
import os
import statistics

from bench_modules import solver_sweep

sweep = solver_sweep()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--graphs", default=sweep.QUICK_GRAPHS)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--bound", choices=["moments", "windows"])
    p.add_argument("--grid", type=int, default=0)
    p.add_argument("--results", default=os.path.join(sweep.ROOT, "bench",
                                                     "results"))
    p.add_argument("--out")
    a = p.parse_args()
    rows = json.load(open(os.path.join(a.results, "sweep.json")))
    names = sweep.pick(list(dict.fromkeys(r["graph"] for r in rows)),
                       a.graphs)
    # The graphs the sweep solved: the project's models as it exported them.
    paths = sweep.shared_graph_files()
    paths.update({m: os.path.join(a.results, f"{m}-graph.json")
                  for m in sweep.OWN_MODELS})
    if a.bound:
        head = ("| graph | budgets | B higher | B lower | same bound | "
                "A median ms | B median ms | A worst ms | B worst ms | "
                "B / A, median of per-budget ratios |")
    else:
        head = ("| graph | budgets | B cheaper | B dearer | same cost | same "
                "schedule | A median ms | B median ms | A worst ms | "
                "B worst ms | B / A, median of per-budget ratios |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    # What is compared and timed: auto's answer, or the cost bound.
    solver, extra, value, time = "auto", (), "cost", "solve_ms"
    if a.bound:
        solver, extra = "none", (f"--bound={a.bound}",)
        value, time = "lower_bound_cost", "bound_ms"
    print("\n".join(lines), flush=True)
    fraction = {(r["graph"], r["budget"]): r["budget_fraction"] for r in rows}
    differ = []
    for g in names:
        budgets = sorted({r["budget"] for r in rows if r["graph"] == g})
        if a.grid:
            floor = sweep.solve(None, paths[g], 1, "auto",
                                binary=a.a)["peak_bytes"]
            peak = sweep.solve(None, paths[g], "1.0x", "none",
                               binary=a.a)["baseline_peak_bytes"]
            budgets = [int(floor + (peak - floor) * i / (a.grid - 1))
                       for i in range(a.grid)]
            fraction.update({(g, b): b / peak for b in budgets})
        cheaper = dearer = same = same_schedule = 0
        times = {"a": [], "b": []}
        for budget in budgets:
            got = {}
            for _ in range(a.repeat):
                for key, binary in (("a", a.a), ("b", a.b)):
                    j = sweep.solve(None, paths[g], budget, solver,
                                    extra=extra, binary=binary,
                                    schedule=not a.bound)
                    if key in got:
                        assert j[value] == got[key][value], "not deterministic"
                        j[time] = min(j[time], got[key][time])
                    got[key] = j
            x, y = got["a"], got["b"]
            times["a"].append(x[time])
            times["b"].append(y[time])
            if y[value] < x[value] * (1 - 1e-12):
                cheaper += 1
            elif y[value] > x[value] * (1 + 1e-12):
                dearer += 1
            else:
                same += 1
            if abs(y[value] - x[value]) > x[value] * 1e-12:
                base = x["baseline_cost"]
                grew = ((y[value] - base) / (x[value] - base)
                        if x[value] > base else float("inf"))
                differ.append(f"| {g} | {fraction[(g, budget)]:.3f} | "
                              f"{x[value] / base:.4f}x | "
                              f"{y[value] / base:.4f}x | {grew:.4f} |")
            if not a.bound:
                same_schedule += x["schedule"] == y["schedule"]
        if a.bound:
            # Higher is better for a bound: B's higher ones first.
            cheaper, dearer = dearer, cheaper
        ratio = statistics.median(
            tb / ta for ta, tb in zip(times["a"], times["b"]))
        line = (f"| {g} | {len(budgets)} | {cheaper} | {dearer} | {same} | "
                + ("" if a.bound else f"{same_schedule} | ") +
                f"{statistics.median(times['a']):.1f} | "
                f"{statistics.median(times['b']):.1f} | "
                f"{max(times['a']):.1f} | {max(times['b']):.1f} | "
                f"{ratio:.3f} |")
        lines.append(line)
        print(line, flush=True)
    if differ:
        more = ["", "| graph | budget / peak | A | B | "
                "B's extra compute / A's |", "|---|---|---|---|---|"]
        more += differ
        print("\n".join(more), flush=True)
        lines += more
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
