#!/usr/bin/python3
"""Budget sweeps of every solver on the benchmark graphs (Checkmate's
protocol): 32 budgets from the smallest one `auto` reaches up to the no-remat
peak. Writes bench/results/sweep.csv, sweep.json and one PNG per graph
(overhead vs budget), and prints a summary: auto against the proven optimum
where milp proves one, auto's worst solve time, and whether auto's overhead
is monotone in the budget: auto's single calls (what the pass makes), and
auto solving the whole sweep in one run (remat-solve --budget=A,B,...,
"auto-sweep"), which carries each answer to the next larger budget and is
monotone by construction.

usage: bench/solver-sweep.py [--build build] [--points 32]
       [--graphs NAME|PREFIX,...]
       [--milp-graphs VGG16,MobileNet:20,ResNet50:150:4]
       [--milp-time-limit 10] [--report-only]

The graphs: Checkmate's three training graphs, Moccasin's four random
layered graphs (no backward pass), and the training steps of the project's
own example models (examples/: mlp, resnet, unet, gpt) as the compiler
exports them; --graphs keeps those it names, each item an exact name
(random_layered_n100 is that graph only) or else a name prefix.

--milp-graphs names the graphs milp runs on, each as NAME[:SECONDS[:EVERY]]:
a time limit of its own and every EVERY-th budget of the sweep only (the
LP relaxation alone takes 80 s on ResNet50). remat-solve measures every
answer against the graph's own cost bound, and milp's rows add the LP
relaxation's and CBC's; the summary measures auto's extra compute against
the best of them: a ratio of at most 1.05 proves auto within 5% of the
optimum's extra compute at that budget.

auto's solve times between 100 ms and 1 s (RETIME_MS, where the
machine's noise of tens of milliseconds matters) are read twice more, in
single calls and in the run of the whole sweep, and the least reading is
kept (`solve_ms`; `solve_ms_first` has the first): the answers are
deterministic (the bench checks that they agree), the readings on a
shared 2-core machine are not (a ResNet50 solve that reads 80 ms also
read 103 ms once).

--report-only reprints the summary (and the tables of every budget: each
solver's overhead beside the bound) and redraws the plots from sweep.json.
Run it with Debian's /usr/bin/python3 (python3-matplotlib) for the plots.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "benchmarks",
                      "checkmate-graphs")
SOLVERS = ["every-layer", "chen-sqrt", "chen-greedy", "greedy", "auto"]
# The project's own example models (examples/NAME.mlir).
OWN_MODELS = ["mlp", "resnet", "unet", "gpt"]
# auto solving the whole sweep in one run (see solve()).
SWEEP = "auto-sweep"
# auto's solves that read longer are read again (see the docstring).
RETIME_MS = 100


# CBC pulls in OpenBLAS, whose worker threads spin for a while after the
# process starts; the solvers run on one thread, so OpenBLAS gets one too
# and solve times are one core's.
ONE_THREAD = dict(os.environ, OPENBLAS_NUM_THREADS="1")


def solve(bin_dir, graph, budget, solver, time_limit=None, extra=(),
          binary=None, schedule=False):
    """One remat-solve run (`binary`, else bin_dir's); `budget` may be a
    list (one run solves them all, auto carrying each answer to the next
    larger budget): then a list of results. Their schedules are dropped
    unless `schedule`."""
    text = ",".join(map(str, budget)) if isinstance(budget, list) else budget
    binary = binary or os.path.join(bin_dir, "remat-solve")
    cmd = [binary, graph, f"--budget={text}",
           f"--solver={solver}", "--json"]
    if time_limit:
        cmd.append(f"--time-limit={time_limit}")
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, env=ONE_THREAD)
    if r.returncode not in (0, 2):
        sys.exit(f"remat-solve failed: {' '.join(cmd)}\n{r.stderr}")
    j = json.loads(r.stdout)
    if not schedule:
        for o in j if isinstance(j, list) else [j]:
            o.pop("schedule")
    return j


def retimed(run):
    """The results of `run()` (a list), run twice more where one of them
    read between RETIME_MS and ten times that: each result's least
    `solve_ms`, its first in `solve_ms_first`."""
    first = run()
    for j in first:
        j["solve_ms_first"] = j["solve_ms"]
    if not any(RETIME_MS < j["solve_ms"] <= 10 * RETIME_MS for j in first):
        return first
    for _ in range(2):
        for j, again in zip(first, run()):
            assert again["cost"] == j["cost"], "auto is not deterministic"
            j["solve_ms"] = min(j["solve_ms"], again["solve_ms"])
    return first


# The graphs whose solves take well under a second each (all but Moccasin's
# n500 and n1000): the default of the benches that solve every budget more
# than once.
QUICK_GRAPHS = ("VGG16_256,MobileNet_512,ResNet50_256,random_layered_n100,"
                "random_layered_n250,mlp,resnet,unet,gpt")


def pick(names, items):
    """The names that the comma-separated `items` pick: an item that is one
    of the names picks that one only (random_layered_n100 is also a prefix
    of random_layered_n1000), any other item every name it begins; all
    names when `items` is empty."""
    if not items:
        return list(names)
    items = items.split(",")
    return [g for g in names if g in items or any(
        g.startswith(i) and i not in names for i in items)]


def shared_graph_files():
    """{name: path} of the graphs in ../shared/benchmarks: Checkmate's three
    training graphs and Moccasin's four random layered graphs."""
    graphs = {name: os.path.join(SHARED, f"{name}_train.json")
              for name in ("VGG16_256", "MobileNet_512", "ResNet50_256")}
    for n in (100, 250, 500, 1000):
        path, = glob.glob(os.path.join(SHARED, f"random_layered_n{n}_*.json"))
        graphs[f"random_layered_n{n}"] = path
    return graphs


def graph_files(bin_dir, out, items=""):
    """{name: path} of the benchmark graphs that `items` picks (see pick());
    the project's own models among them are exported into `out` first."""
    graphs = shared_graph_files()
    graphs.update({m: os.path.join(out, f"{m}-graph.json")
                   for m in OWN_MODELS})
    graphs = {g: graphs[g] for g in pick(list(graphs), items)}
    # The project's own models: each example's training step, exported by
    # the compiler.
    for model in OWN_MODELS:
        if model in graphs:
            subprocess.check_call(
                [os.path.join(bin_dir, "remat-compile"),
                 os.path.join(ROOT, "examples", f"{model}.mlir"),
                 "--emit=graph", "-o", graphs[model]])
    return graphs


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--points", type=int, default=32)
    p.add_argument("--graphs", default="")
    p.add_argument("--milp-graphs",
                   default="VGG16,MobileNet:20,ResNet50:150:4")
    p.add_argument("--milp-time-limit", type=float, default=10)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args()
    if a.report_only:
        rows = json.load(open(os.path.join(a.out, "sweep.json")))
        graphs = list(dict.fromkeys(r["graph"] for r in rows))
        return report(rows, graphs, a.out)
    bin_dir = os.path.join(a.build, "bin")
    os.makedirs(a.out, exist_ok=True)
    graphs = graph_files(bin_dir, a.out, a.graphs)
    milp_specs = {}
    for spec in filter(None, a.milp_graphs.split(",")):
        prefix, *rest = spec.split(":")
        for g in graphs:
            if g.startswith(prefix):
                milp_specs[g] = (float(rest[0]) if rest else a.milp_time_limit,
                                 int(rest[1]) if len(rest) > 1 else 1)

    rows = []
    for name, path in graphs.items():
        base = solve(bin_dir, path, "1.0x", "none")
        floor = solve(bin_dir, path, 1, "auto")["peak_bytes"]
        peak = base["baseline_peak_bytes"]
        budgets = [int(floor + (peak - floor) * i / (a.points - 1))
                   for i in range(a.points)]
        limit, every = milp_specs.get(name, (None, 0))

        def add(s, b, j):
            rows.append({"graph": name, "solver": s, "budget": b,
                         "budget_fraction": b / peak,
                         "feasible": j["feasible"],
                         "overhead": j["overhead"] if j["feasible"] else None,
                         "solve_ms": j["solve_ms"],
                         "solve_ms_first": j.get("solve_ms_first",
                                                 j["solve_ms"]),
                         "optimal": j["optimal"],
                         "cost": j["cost"],
                         "baseline_cost": j["baseline_cost"],
                         "lower_bound_cost": j["lower_bound_cost"],
                         "lower_bound_overhead":
                             (j["lower_bound_cost"] / j["baseline_cost"]
                              if j["lower_bound_cost"] is not None else None)})
        for k, b in enumerate(budgets):
            solvers = SOLVERS + (["milp"] if every and k % every == 0 else [])
            for s in solvers:
                if s == "auto":
                    add(s, b, retimed(lambda: [solve(bin_dir, path, b, s)])[0])
                else:
                    add(s, b, solve(bin_dir, path, b, s,
                                    limit if s == "milp" else None))
        # auto over the whole sweep in one run: each answer carried to the
        # next larger budget (remat-solve --budget=A,B,...).
        carried = retimed(lambda: solve(bin_dir, path, budgets, "auto"))
        for b, j in zip(budgets, carried):
            add(SWEEP, b, j)
        print(f"{name}: {len(budgets)} budgets from {floor / peak:.3f} to 1.0 "
              f"of the no-remat peak ({peak} bytes)", flush=True)

    with open(os.path.join(a.out, "sweep.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    return report(rows, list(graphs), a.out)


def envelope(points):
    """The best lower bound at each budget from (budget, bound) pairs, several
    per budget allowed (the graph's bound on every row, milp's on its own):
    the largest at that budget or at any larger one. A schedule that fits a
    budget fits every larger one, so the optimum never rises as the budget
    shrinks, and a bound at a larger budget holds at a smaller one too (the
    graph's own bound, a maximum over heuristic pieces, is not monotone)."""
    best = {}
    for b, v in points:
        best[b] = max(best.get(b, v), v)
    running = None
    for b in sorted(best, reverse=True):
        running = best[b] if running is None else max(running, best[b])
        best[b] = running
    return best


def print_budgets(rows, name):
    """Every budget of one graph, every solver's overhead side by side, with
    the best lower bound; milp's answer is marked proven optimal (*) where
    it is, and "-" is a budget a solver cannot meet."""
    mine = [r for r in rows if r["graph"] == name]
    bounds = envelope([(r["budget"], r["lower_bound_cost"]) for r in mine
                       if r.get("lower_bound_cost") is not None])
    solvers = [s for s in ["auto", SWEEP, "milp", "greedy", "chen-greedy",
                           "every-layer", "chen-sqrt"]
               if any(r["solver"] == s for r in mine)]
    print(f"\n{name}, every budget (overhead; * milp proven optimal):\n")
    print("| budget / peak | bound | " + " | ".join(solvers) + " |")
    print("|---|---|" + "---|" * len(solvers))
    for b in sorted({r["budget"] for r in mine}):
        at = {r["solver"]: r for r in mine if r["budget"] == b}
        first = next(iter(at.values()))
        cells = []
        for s in solvers:
            r = at.get(s)
            if r is None:
                cells.append("")
            elif not r["feasible"]:
                cells.append("-")
            else:
                cells.append(f"{r['overhead']:.4f}" +
                             ("*" if s == "milp" and r["optimal"] else ""))
        bound = (f"{bounds[b] / first['baseline_cost']:.4f}" if b in bounds
                 else "")
        print(f"| {first['budget_fraction']:.3f} | {bound} | " +
              " | ".join(cells) + " |")


def report(rows, graphs, out):

    print("\n| graph | auto feasible | auto worst solve ms | auto monotone | "
          "auto-sweep monotone | auto-sweep worst solve ms | "
          "budgets where auto-sweep beats auto | "
          "milp proven points | auto vs optimum, worst extra-compute ratio | "
          "bounded points | auto proven within 5% of the optimum | "
          "auto-sweep proven within 5% | "
          "budgets where a heuristic beats auto |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    details = []
    for name in graphs:
        by = lambda s: [r for r in rows if r["graph"] == name and r["solver"] == s]
        auto = by("auto")
        feasible = sum(r["feasible"] for r in auto)
        worst_ms = max(r["solve_ms"] for r in auto)
        def is_monotone(rs):
            over = [r["overhead"] for r in rs if r["feasible"]]
            return all(x >= y - 1e-12 for x, y in zip(over, over[1:]))
        monotone = is_monotone(auto)
        sweep = by(SWEEP)
        sweep_cost = {r["budget"]: r["cost"] for r in sweep if r["feasible"]}
        sweep_wins = sum(1 for r in auto if r["budget"] in sweep_cost and
                         (not r["feasible"] or
                          sweep_cost[r["budget"]] < r["cost"] - 1e-9))
        milp = {r["budget"]: r for r in by("milp")}
        proven, ratios = 0, []
        for r in auto:
            m = milp.get(r["budget"])
            if m and m["optimal"] and m["feasible"]:
                proven += 1
                extra_opt = m["overhead"] - 1
                extra_auto = r["overhead"] - 1
                ratios.append((extra_auto + 1e-12) / (extra_opt + 1e-12)
                              if extra_opt > 1e-9 else (1.0 if extra_auto < 1e-9 else float("inf")))
        # The best lower bound at each budget: every row carries the
        # graph's own (remat-solve measures every answer against it), milp's
        # rows the LP's and CBC's too.
        bounds = envelope([(o["budget"], o["lower_bound_cost"]) for o in rows
                           if o["graph"] == name and
                           o.get("lower_bound_cost") is not None])
        def within_5(rs):
            n = 0
            for r in rs:
                lb = bounds.get(r["budget"])
                if lb is None or not r["feasible"]:
                    continue
                extra_lb = lb - r["baseline_cost"]
                extra = r["cost"] - r["baseline_cost"]
                n += (extra / extra_lb if extra_lb > 0 else
                      (1.0 if extra <= 0 else float("inf"))) <= 1.05
            return n
        bounded, within = 0, 0
        for r in auto:
            lb = bounds.get(r["budget"])
            if lb is None or not r["feasible"]:
                continue
            bounded += 1
            extra_lb = lb - r["baseline_cost"]
            extra_auto = r["cost"] - r["baseline_cost"]
            ratio_lb = (extra_auto / extra_lb if extra_lb > 0 else
                        (1.0 if extra_auto <= 0 else float("inf")))
            within += ratio_lb <= 1.05
            details.append(f"{name} at {r['budget_fraction']:.3f}: auto "
                           f"{r['overhead']:.5f}x, bound "
                           f"{lb / r['baseline_cost']:.5f}x, "
                           f"extra compute {ratio_lb:.3f} of the bound's")
        beaten = 0
        for r in auto:
            others = [o for o in rows if o["graph"] == name and
                      o["budget"] == r["budget"] and o["feasible"] and
                      o["solver"] in SOLVERS and o["solver"] != "auto"]
            if others and (not r["feasible"] or
                           min(o["overhead"] for o in others) < r["overhead"] - 1e-12):
                beaten += 1
        ratio = f"{max(ratios):.3f}" if ratios else "n/a"
        sweep_ms = (f"{max(r['solve_ms'] for r in sweep):.1f}" if sweep
                    else "n/a")
        sweep_mono = ("yes" if is_monotone(sweep) else "NO") if sweep else "n/a"
        print(f"| {name} | {feasible}/{len(auto)} | {worst_ms:.1f} | "
              f"{'yes' if monotone else 'NO'} | {sweep_mono} | {sweep_ms} | "
              f"{sweep_wins} | {proven if milp else 'not run'} | "
              f"{ratio} | {bounded} | "
              f"{f'{within}/{bounded}' if bounded else 'n/a'} | "
              f"{f'{within_5(sweep)}/{bounded}' if sweep else 'n/a'} | "
              f"{beaten} |")
    if details:
        print("\nauto against the best lower bound (the optimum lies between):")
        for d in details:
            print("  " + d)
    for name in graphs:
        print_budgets(rows, name)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (apt-get install python3-matplotlib): "
              "no plots")
        return 0
    for name in graphs:
        fig, ax = plt.subplots(figsize=(6, 4))
        for s in SOLVERS + [SWEEP, "milp"]:
            pts = [(r["budget_fraction"], r["overhead"]) for r in rows
                   if r["graph"] == name and r["solver"] == s and r["feasible"]]
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o" if s == "milp" else ".", label=s,
                    linestyle={"milp": "none", SWEEP: "--"}.get(s, "-"))
        lbs = envelope([(r["budget_fraction"], r["lower_bound_overhead"])
                        for r in rows if r["graph"] == name and
                        r.get("lower_bound_overhead") is not None])
        if lbs:
            xs, ys = zip(*sorted(lbs.items()))
            ax.plot(xs, ys, marker="x", linestyle="none", color="black",
                    label="lower bound")
        ax.set_xlabel("budget / no-remat peak")
        ax.set_ylabel("compute overhead (x)")
        ax.set_title(name)
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"sweep-{name}.png"), dpi=100)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
