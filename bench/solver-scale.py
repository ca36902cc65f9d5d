#!/usr/bin/python3
"""Solve time against graph size: Moccasin's random layered graphs (100 to
1000 nodes) at 0.9x and 0.8x of the no-remat peak (Moccasin's protocol), and
synthetic training graphs from bench/gen-training-graph.py up to 10,001
nodes at 0.5x, and the largest also at tighter budgets down to one below
every schedule's peak (a refusal), where greedy's runs take longest; and a
synthetic layered graph of 10,000 nodes without a backward pass, like
Moccasin's, from bench/gen-layered-graph.py, at Moccasin's budgets. Each
solve runs under a wall-clock cap; a solver that passes it is reported as
such, not hidden.

Writes bench/results/scale.json and the printed table as scale.md; the
lower bound is the graph's cost bound that remat-solve reports (the
optimum lies between it and the best answer).

usage: bench/solver-scale.py [--build build] [--cap 120]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "benchmarks",
                      "checkmate-graphs")


# CBC pulls in OpenBLAS, whose worker threads spin for a while after the
# process starts; the solvers run on one thread, so OpenBLAS gets one too
# and solve times are one core's.
ONE_THREAD = dict(os.environ, OPENBLAS_NUM_THREADS="1")

# The largest synthetic graph's tighter budgets; the last is below every
# schedule's peak.
TIGHT = ("0.2x", "0.1x", "0.05x", "0.02x", "0.01x", "0.005x", "0.001x")


def run(bin_dir, graph, budget, solver, cap):
    cmd = [os.path.join(bin_dir, "remat-solve"), graph, f"--budget={budget}",
           f"--solver={solver}", "--json"]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=cap,
                           env=ONE_THREAD)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode not in (0, 2):
        sys.exit(r.stderr)
    j = json.loads(r.stdout)
    j.pop("schedule")
    j["wall_s"] = time.perf_counter() - t0
    return j


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--cap", type=float, default=120)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 "scale.json"))
    a = p.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    cases = []
    for path in sorted(glob.glob(os.path.join(SHARED, "random_layered_*.json")),
                       key=lambda f: int(f.split("_n")[1].split("_")[0])):
        for b in ("0.9x", "0.8x"):
            cases.append((path, b))
    tmp = tempfile.mkdtemp()
    for forward in (500, 1000, 2500, 5000):
        path = os.path.join(tmp, f"train{2 * forward + 1}.json")
        subprocess.check_call([sys.executable,
                               os.path.join(ROOT, "bench", "gen-training-graph.py"),
                               "--forward", str(forward), "-o", path])
        cases.append((path, "0.5x"))
    cases += [(path, b) for b in TIGHT]
    path = os.path.join(tmp, "layered10000.json")
    subprocess.check_call([sys.executable,
                           os.path.join(ROOT, "bench", "gen-layered-graph.py"),
                           "--nodes", "10000", "-o", path])
    cases += [(path, "0.9x"), (path, "0.8x")]
    rows = []
    lines = []

    def emit(line):
        print(line, flush=True)
        lines.append(line)

    emit("| graph | nodes | budget | solver | feasible | overhead | "
         "lower bound | solve ms |")
    emit("|---|---|---|---|---|---|---|---|")
    for path, budget in cases:
        for solver in ("chen-greedy", "greedy", "auto"):
            j = run(bin_dir, path, budget, solver, a.cap)
            name = os.path.basename(path)[:-5]
            if j is None:
                emit(f"| {name} | | {budget} | {solver} | "
                     f"over the {a.cap:.0f} s cap | | | |")
                rows.append({"graph": name, "budget": budget, "solver": solver,
                             "timeout_s": a.cap})
                continue
            bound = (j["lower_bound_cost"] / j["baseline_cost"]
                     if j.get("lower_bound_cost") is not None else None)
            emit(f"| {name} | {j['nodes']} | {budget} | {solver} | "
                 f"{'yes' if j['feasible'] else 'no'} | "
                 f"{j['overhead']:.4f} | "
                 f"{'' if bound is None else f'{bound:.4f}'} | "
                 f"{j['solve_ms']:.1f} |")
            rows.append({"graph": name, "budget": budget, "solver": solver,
                         "nodes": j["nodes"], "feasible": j["feasible"],
                         "overhead": j["overhead"],
                         "lower_bound_overhead": bound,
                         "solve_ms": j["solve_ms"]})
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.splitext(a.out)[0] + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
