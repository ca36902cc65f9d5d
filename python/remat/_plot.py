"""A picture of the plan before the run: live bytes over the step's
schedule without remat and under the memory limit, with the limit, the
fixed part (parameters, optimizer state, inputs and labels) and the
recomputed ops marked.

The step graph comes from remat-compile --emit=graph and the two schedules
from remat-solve (no remat, and the step's solver at its limit: the
compiler's own plan, deterministic); the bytes follow the simulator's
accounting (lib/Remat/Graph.cpp): arguments live throughout, a computation
adds its value (nothing where it overwrites an argument in place) and holds
its workspace while it runs, a free removes the value.
"""

import json
import pathlib
import subprocess
import tempfile

from ._step import RematError, _tool




def timeline(graph, events):
    """(bytes while each computation runs, whether it recomputes a value)
    for each compute event, and the fixed bytes."""
    nodes = {n["id"]: n for n in graph["nodes"]}

    def allocated(n):
        return 0 if n.get("overwrites", -1) >= 0 else n["cost_ram"]

    fixed = sum(n["cost_ram"] for n in nodes.values() if n.get("argument"))
    live, seen, points = fixed, set(), []
    for kind, node in events:
        n = nodes[node]
        if kind == "free":
            live -= allocated(n)
            continue
        live += allocated(n)
        points.append((live + n.get("workspace", 0), node in seen))
        seen.add(node)
    return points, fixed


def schedules(mlir, flags, limit, solver, work, solve_flags=()):
    """The step graph of `mlir` compiled with `flags`, and its schedules
    without remat and (where `limit` is set) at `limit` bytes."""
    graph_path = work / "graph.json"
    r = subprocess.run([_tool("remat-compile"), str(mlir), "--emit=graph",
                        "-o", str(graph_path), *flags],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RematError(r.stderr.strip() or "remat-compile failed")
    graph = json.loads(graph_path.read_text())
    out = {}
    for name, budget, how in [("without remat", "1x", "none"),
                              ("with remat", limit, solver)]:
        if budget is None:
            continue
        r = subprocess.run([_tool("remat-solve"), str(graph_path),
                            f"--budget={budget}", f"--solver={how}", "--json",
                            *(solve_flags if how != "none" else ())],
                           capture_output=True, text=True)
        if r.returncode not in (0, 2):
            raise RematError(r.stderr.strip() or "remat-solve failed")
        answer = json.loads(r.stdout)
        if not answer["feasible"]:
            raise RematError(f"no schedule of the '{how}' solver fits the "
                             f"limit ({budget}); the smallest peak it "
                             f"reaches is {answer['peak_bytes']} bytes")
        out[name] = answer["schedule"]
    return graph, out


def plot(mlir, flags, limit, solver, path, title=None, solve_flags=(),
         arena=None):
    """Draws the plan of the step `mlir` compiles to (with `flags`) at
    `limit` (bytes, or a fraction of the peak without remat such as "0.5x";
    None: no remat) to `path`, and with `arena` (bytes) the compiled step's
    peak with its arena; returns the peaks drawn, in bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with tempfile.TemporaryDirectory(prefix="remat-plot.") as tmp:
        graph, plans = schedules(mlir, flags, limit, solver,
                                 pathlib.Path(tmp), solve_flags)
    mib = 1 / (1 << 20)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    peaks = {}
    fixed = 0
    for name, events in plans.items():
        points, fixed = timeline(graph, events)
        ys = [b * mib for b, _ in points]
        peaks[name] = max(b for b, _ in points)
        ax.plot(range(len(ys)), ys, label=f"{name} (peak "
                f"{peaks[name] * mib:.2f} MiB, {len(ys)} ops)",
                linewidth=1.2)
        again = [(k, y) for k, ((_, re), y) in enumerate(zip(points, ys))
                 if re]
        if again:
            ax.scatter([k for k, _ in again], [y for _, y in again], s=10,
                       color="tab:red", zorder=3,
                       label=f"recomputed ({len(again)})")
    if isinstance(limit, str):  # as remat-solve reads a fraction
        limit = int(float(limit[:-1]) * peaks["without remat"])
    if limit is not None:
        ax.axhline(limit * mib, color="black", linestyle="--",
                   label=f"limit {limit * mib:.2f} MiB")
    if arena is not None:
        # The arena holds the live bytes at their compile-time offsets: its
        # line sits at or above the live peak by the plan's fragmentation.
        peaks["arena"] = arena
        ax.axhline(arena * mib, color="tab:green", linestyle="-.",
                   label=f"step with its arena {arena * mib:.2f} MiB")
    ax.axhline(fixed * mib, color="gray", linestyle=":",
               label=f"fixed part {fixed * mib:.2f} MiB")
    ax.set_xlabel("op in schedule order")
    ax.set_ylabel("live MiB")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "Remat's plan: live memory over the step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return peaks
