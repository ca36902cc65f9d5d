#!/usr/bin/python3
"""auto's single calls on a dense grid of budgets, between the sweep's
points: whether a larger budget ever costs more (what `train-remat`, one
call per compile, gives a user), and how long each solve takes. The
sweep (bench/solver-sweep.py) looks at 32 budgets per graph; a search that
depends on the budget can rise, or run long, between them.

usage: bench/solver-scan.py [--build build] [--points 128]
       [--graphs NAME|PREFIX,...] [--out bench/results]

For each graph: --points budgets evenly spaced from the smallest one auto
reaches to the no-remat peak, each solved by its own remat-solve run
(auto, one thread). A "rise" is a budget whose answer costs more than the
cheapest answer at a smaller budget; the table gives how many, and the
worst as a ratio of overhead (cost / cost without remat) and of extra
compute. The same grid is then solved in one run (`--budget=B1,B2,...`,
each answer carried to the next budget), which is monotone by
construction: its cost beside the single calls'. Solve times are one
process's wall-clock reading on a shared machine; single calls that read
between 100 ms and 1 s are read twice more, as in the sweep
(solver-sweep.py, RETIME_MS), and the table reports the least of the
three readings (the work is deterministic: the same answer each time)
beside the first.

The graphs: those of the sweep, by default without Moccasin's n500 and
n1000 (3 to 10 s a solve near their smallest budgets); --graphs picks by
exact name or name prefix. Writes scan.json and scan.md into --out.
"""
import argparse
import json
import os

from bench_modules import solver_sweep

sweep = solver_sweep()


def rises(points):
    """(count, worst overhead ratio, worst extra-compute ratio) of the
    answers that cost more than a feasible answer at a smaller budget;
    `points` are (overhead or None, ...) by increasing budget."""
    count, worst, worst_extra, best = 0, 1.0, 1.0, None
    for ov in points:
        if ov is None:
            continue
        if best is not None and ov > best * (1 + 1e-12):
            count += 1
            worst = max(worst, ov / best)
            if best > 1:
                worst_extra = max(worst_extra, (ov - 1) / (best - 1))
        best = ov if best is None else min(best, ov)
    return count, worst, worst_extra


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(sweep.ROOT, "build"))
    p.add_argument("--points", type=int, default=128)
    p.add_argument("--graphs", default=sweep.QUICK_GRAPHS)
    p.add_argument("--out", default=os.path.join(sweep.ROOT, "bench",
                                                 "results"))
    a = p.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    os.makedirs(a.out, exist_ok=True)
    graphs = sweep.graph_files(bin_dir, a.out, a.graphs)
    head = ("| graph | budgets | from / peak | feasible | rises | worst rise, "
            "overhead | worst rise, extra compute | carried run: rises | "
            "carried cheaper / dearer than single | median solve ms | "
            "worst solve ms, first reading | worst solve ms, least of 3 | "
            f"solves over {sweep.RETIME_MS} ms, least of 3 |")
    lines = [head, "|" + "---|" * 13]
    print("\n".join(lines), flush=True)
    results = []
    for name, path in graphs.items():
        base = sweep.solve(bin_dir, path, "1.0x", "none")
        floor = sweep.solve(bin_dir, path, 1, "auto")["peak_bytes"]
        peak = base["baseline_peak_bytes"]
        budgets = [int(floor + (peak - floor) * i / (a.points - 1))
                   for i in range(a.points)]
        rows = []
        for b in budgets:
            j, = sweep.retimed(lambda: [sweep.solve(bin_dir, path, b, "auto")])
            rows.append({"budget": b, "feasible": j["feasible"],
                         "overhead": j["overhead"] if j["feasible"] else None,
                         "solve_ms": j["solve_ms"],
                         "solve_ms_first": j["solve_ms_first"]})
        carried = sweep.solve(bin_dir, path, budgets, "auto")
        for r, c in zip(rows, carried):
            r["carried_overhead"] = c["overhead"] if c["feasible"] else None
        single = [r["overhead"] for r in rows]
        count, worst, worst_extra = rises(single)
        ccount = rises([r["carried_overhead"] for r in rows])[0]
        tol = 1e-12
        cheaper = sum(1 for r in rows if r["overhead"] is not None and
                      r["carried_overhead"] is not None and
                      r["carried_overhead"] < r["overhead"] * (1 - tol))
        dearer = sum(1 for r in rows if r["overhead"] is not None and
                     r["carried_overhead"] is not None and
                     r["carried_overhead"] > r["overhead"] * (1 + tol))
        feasible = [r for r in rows if r["feasible"]]
        first = sorted(r["solve_ms_first"] for r in feasible)
        least = [r["solve_ms"] for r in feasible]
        over = sum(1 for t in least if t > sweep.RETIME_MS)
        line = (f"| {name} | {len(rows)} | {floor / peak:.3f} | "
                f"{len(feasible)}/{len(rows)} | {count} | {worst:.4f} | "
                f"{worst_extra:.3f} | {ccount} | {cheaper} / {dearer} | "
                f"{first[len(first) // 2]:.1f} | {first[-1]:.1f} | "
                f"{max(least):.1f} | {over} |")
        lines.append(line)
        print(line, flush=True)
        results.append({"graph": name, "peak": peak, "rows": rows})
    with open(os.path.join(a.out, "scan.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.out, "scan.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
