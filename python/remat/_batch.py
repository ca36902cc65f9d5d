"""The largest batch whose training step fits a memory size, per solver, by
the compiler's plan.

A step's graph (remat-compile --emit=graph) has the same nodes and edges at
every batch size; each value's bytes and each op's FLOPs are affine in the
batch (activations scale, parameters and their gradients do not). So the
graph is exported at batches 2 and 3, checked against batch 4 (a model whose
sizes are not affine in the batch is refused), and extrapolated to any batch;
remat-solve then answers each batch of a doubling and bisection search. The
one exception is an op's workspace: a library's scratch (oneDNN's, for CPU
convolutions) depends on how the library splits the work, not linearly on
the batch. It is extrapolated as its largest value at batches 2 to 4, and
the search's answer is checked, and moved, on graphs exported at that batch
and the next.
"""

import json
import pathlib
import re
import subprocess
import tempfile

import torch

import remat_export

from ._step import RematError, _tool

SOLVERS = ("none", "chen-sqrt", "chen-greedy", "auto")

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9,
          "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30,
          "TIB": 2**40}


def parse_bytes(memory):
    """Bytes from an int or a string such as "16GiB", "80 GB", "1e9"."""
    if isinstance(memory, int) and not isinstance(memory, bool):
        if memory <= 0:
            raise RematError(f"memory must be positive, got {memory}")
        return memory
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][0-9]+)?)\s*([KMGT]i?B|B)?\s*",
                     str(memory), re.IGNORECASE)
    if not m:
        raise RematError(f"memory {memory!r} is not a size: expected bytes or "
                         "a number with KB, MB, GB, KiB, MiB or GiB")
    value = float(m.group(1)) * _UNITS[(m.group(2) or "").upper()]
    if not value >= 1:
        raise RematError(f"memory {memory!r} is less than a byte")
    return int(value)




def _example(input_for_batch, batch, dtype):
    value = input_for_batch(batch)
    if isinstance(value, torch.Tensor):
        return value
    try:
        shape = [int(d) for d in value]
    except (TypeError, ValueError):
        raise RematError("input_for_batch must return a tensor or a shape, "
                         f"got {type(value).__name__}") from None
    return torch.randn(shape, dtype=dtype)


def _graph_at_batch(model, input_for_batch, batch, loss, dtype, work):
    x = _example(input_for_batch, batch, dtype)
    try:
        text = remat_export.Exporter(model, x, loss, "model").export()
    except remat_export.ExportError as e:
        raise RematError(str(e)) from None
    mlir = work / f"b{batch}.mlir"
    out = work / f"b{batch}.json"
    mlir.write_text(text)
    r = subprocess.run([_tool("remat-compile"), str(mlir), "--emit=graph",
                        "-o", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RematError(r.stderr.strip() or "remat-compile failed")
    return json.loads(out.read_text())


_SCALED = ("cost_cpu", "cost_ram", "workspace")


class AffineGraph:
    """A step graph as a function of the batch: fields in _SCALED are
    a + b * batch per node, fitted at two batches and checked at a third."""

    def __init__(self, g2, g3, g4):
        def shape(g):
            return ([n.get("name") for n in g["nodes"]],
                    [(l["source"], l["target"]) for l in g["links"]])
        if not shape(g2) == shape(g3) == shape(g4):
            raise RematError("the step's graph changes with the batch size "
                             "(other ops or edges at batch 2, 3 and 4): its "
                             "memory cannot be extrapolated")
        self.base = json.loads(json.dumps(g2))
        self.slope = []
        for n, n2, n3, n4 in zip(self.base["nodes"], g2["nodes"], g3["nodes"],
                                 g4["nodes"]):
            slope = {}
            for f in _SCALED:
                a, b, c = n2.get(f, 0), n3.get(f, 0), n4.get(f, 0)
                if f == "workspace" and c - b != b - a:
                    n[f] = max(a, b, c)
                    continue
                if c - b != b - a:
                    raise RematError(
                        f"{f} of node {n2['id']} ({n2.get('name')}) is not "
                        f"affine in the batch size ({a}, {b}, {c} at batches "
                        "2, 3, 4): the step's memory cannot be extrapolated")
                slope[f] = b - a
            self.slope.append(slope)

    def at(self, batch):
        g = json.loads(json.dumps(self.base))
        for node, slope in zip(g["nodes"], self.slope):
            for f, s in slope.items():
                if f in node or s:
                    node[f] = node.get(f, 0) + s * (batch - 2)
        return g


def _fits(graph, memory, solver, work):
    path = work / "g.json"
    path.write_text(json.dumps(graph))
    r = subprocess.run([_tool("remat-solve"), str(path), f"--budget={memory}",
                        f"--solver={solver}", "--json"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 2):
        raise RematError(r.stderr.strip() or "remat-solve failed")
    return json.loads(r.stdout)["feasible"]


def _largest(fits, limit):
    """The largest b in [1, limit] with fits(b), by doubling then bisection
    (0 where batch 1 does not fit)."""
    if not fits(1):
        return 0
    good = 1
    while good < limit:
        nxt = min(2 * good, limit)
        if not fits(nxt):
            bad = nxt
            break
        good = nxt
    else:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def max_batch(build_model, input_for_batch, memory, solvers=SOLVERS,
              loss="cross_entropy", dtype=torch.float32, limit=1 << 24):
    """The largest batch whose training step (parameters, their gradients
    and update, inputs, labels and activations) fits `memory` (bytes or
    "16GiB"), for each solver: {solver: batch}, 0 where batch 1 does not
    fit. `build_model()` returns the nn.Module; `input_for_batch(b)` the
    input's shape at batch b (or an input tensor, for integer inputs).
    Batches up to `limit` are searched."""
    memory = parse_bytes(memory)
    for s in solvers:
        if s not in SOLVERS + ("greedy", "every-layer"):
            raise RematError(f"unknown solver {s!r}; expected one of "
                             f"{', '.join(SOLVERS + ('greedy', 'every-layer'))}")
    model = build_model()
    with tempfile.TemporaryDirectory(prefix="remat-batch.") as tmp:
        work = pathlib.Path(tmp)
        exported = {}

        def graph(b):
            if b not in exported:
                exported[b] = _graph_at_batch(model, input_for_batch, b, loss,
                                              dtype, work)
            return exported[b]
        affine = AffineGraph(graph(2), graph(3), graph(4))
        found = {}
        for s in solvers:
            b = _largest(lambda b: _fits(affine.at(b), memory, s, work), limit)
            # The exported graphs have the exact workspaces.
            while b > 0 and not _fits(graph(b), memory, s, work):
                b -= 1
            while b < limit and _fits(graph(b + 1), memory, s, work):
                b += 1
            found[s] = b
        return found
