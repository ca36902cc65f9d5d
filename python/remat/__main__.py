"""Command-line tools of the Python package.

  python3 -m remat max-batch MODEL --input-shape 3,224,224 --memory 16GiB,80GiB
  python3 -m remat plot-memory STEP.mlir --memory-limit 50% -o mem.png

max-batch prints, for each memory size, the largest batch whose training
step fits by the compiler's plan, for each solver. MODEL is a torchvision
model, a zoo model (python/zoo.py) or FILE.py:NAME; --input-shape is the
input's shape without the batch dimension. Integer inputs (token ids):
--input-dtype i64 --vocab N.

plot-memory draws the plan of a model's step (a forward model in the train
dialect, as remat-export writes it): live bytes over the schedule without
remat and under --memory-limit (bytes, KiB/MiB/GiB or a percentage of the
peak), the limit, the fixed part and the recomputed ops; other
remat-compile flags (--optimizer=...) follow --.
"""

import argparse
import sys

import torch

import remat_export

from ._batch import SOLVERS, max_batch, parse_bytes
from ._step import RematError


def _max_batch(argv):
    p = argparse.ArgumentParser(prog="python3 -m remat max-batch",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--input-shape", required=True,
                   help="comma-separated, without the batch dimension")
    p.add_argument("--input-dtype", choices=["i64"], default=None)
    p.add_argument("--vocab", type=int, default=0)
    p.add_argument("--memory", required=True,
                   help="comma-separated sizes, e.g. 16GiB,80GiB")
    p.add_argument("--solvers", default=",".join(SOLVERS))
    p.add_argument("--mse", action="store_true", help="MSE loss instead")
    a = p.parse_args(argv)
    try:
        shape = [int(d) for d in a.input_shape.split(",")]
        if a.input_dtype == "i64" and a.vocab <= 0:
            raise RematError("--input-dtype i64 needs --vocab")
        memories = a.memory.split(",")
        for m in memories:
            parse_bytes(m)
        solvers = a.solvers.split(",")

        def inputs(b):
            if a.input_dtype == "i64":
                return torch.randint(0, a.vocab, [b, *shape])
            return [b, *shape]

        def build():
            torch.manual_seed(0)
            return remat_export.load_model(a.model).train()

        print(f"{a.model}, input {'x'.join(map(str, shape))}: the largest "
              "batch whose training step fits, by the compiler's plan")
        print()
        print("| memory | " + " | ".join(solvers) + " |")
        print("|---" * (len(solvers) + 1) + "|")
        for m in memories:
            found = max_batch(build, inputs, m, solvers=solvers,
                              loss="mse" if a.mse else "cross_entropy")
            print(f"| {m} | " + " | ".join(str(found[s]) for s in solvers)
                  + " |", flush=True)
    except (RematError, remat_export.ExportError, ValueError) as e:
        print(f"remat max-batch: error: {e}", file=sys.stderr)
        return 1
    return 0


def _plot_memory(argv):
    from . import _plot
    p = argparse.ArgumentParser(prog="python3 -m remat plot-memory",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--memory-limit", default=None)
    p.add_argument("--solver", default="auto")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("flags", nargs="*", help="remat-compile flags, after --")
    a = p.parse_args(argv)
    try:
        limit = a.memory_limit
        if limit is not None:
            limit = (f"{float(limit[:-1]) / 100!r}x" if limit.endswith("%")
                     else parse_bytes(limit))
        peaks = _plot.plot(a.model, a.flags, limit, a.solver, a.output)
    except (RematError, ValueError) as e:
        print(f"remat plot-memory: error: {e}", file=sys.stderr)
        return 1
    for name, peak in peaks.items():
        print(f"{name}: peak {peak} bytes")
    print(f"wrote {a.output}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    tools = {"max-batch": _max_batch, "plot-memory": _plot_memory}
    if not argv or argv[0] not in tools:
        print(__doc__, file=sys.stderr)
        return 1
    return tools[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
