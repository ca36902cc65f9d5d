#!/usr/bin/env python3
"""PyTorch 2.x's activation memory budget beside Remat, model by model.

Runs under the virtual environment bench/torch2-setup.sh makes (PyTorch 2.x
from PyPI; Debian's torch 1.13 has no such budget), on the models, shapes
and seeds of bench/torch-side-by-side.py. For each model (float32, one
thread) and each `torch._functorch.config.activation_memory_budget` in
1.0, 0.5, 0.2, 0: the loss function compiled by torch.compile with AOT
autograd and the min-cut partitioner (the partitioner Inductor uses, with
the graphs run as they are, so the step time is the schedule's, not a code
generator's): activation bytes the forward graph hands to the backward
graph (parameters and the input excluded, storages counted once), the
step's peak above what existed before it (profiler memory events) and the
median step time over eager's, interleaved. Beside each, from the Remat
sweep bench/torch-side-by-side.py recorded (--remat-results): Remat's
cheapest schedule that keeps no more activation bytes, and its cheapest
whose step peak (above parameters, inputs and labels) is no higher, with
their predicted extra compute; each then built and run by remat-run beside
its build without remat (measured peak and step time; --no-measure skips
this).

usage: build/torch2-venv/bin/python bench/torch2-budget.py
         [--models mlp,gpt,gpt512,resnet18,vgg16,mobilenet_v2,unet] [--repeats 5]
         [--remat-results bench/results/torch-side-by-side.json]
         [--out bench/results/torch2-budget.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_modules import side_by_side
import time
import warnings

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGETS = (1.0, 0.5, 0.2, 0.0)


def compiled_loss(module, budget, saved):
    """The loss of `module` compiled with AOT autograd's min-cut partitioner
    under `budget`; appends the forward's saved bytes to `saved` per call."""
    import torch._functorch.config as fconfig
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    fconfig.activation_memory_budget = budget
    torch._dynamo.reset()

    def fw_compiler(gm, example_inputs):
        def run(*args):
            inputs = {a.untyped_storage().data_ptr() for a in args
                      if isinstance(a, torch.Tensor)}
            outs = gm(*args)
            seen = {}
            for o in outs[1:]:  # outs[0] is the loss; the rest is saved
                if not isinstance(o, torch.Tensor):
                    continue
                ptr = o.untyped_storage().data_ptr()
                if ptr not in inputs:
                    seen[ptr] = o.untyped_storage().nbytes()
            saved.append(sum(seen.values()))
            return outs
        return make_boxed_func(run)

    def bw_compiler(gm, example_inputs):
        return make_boxed_func(gm)

    backend = aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler,
                           partition_fn=min_cut_rematerialization_partition)
    return torch.compile(
        lambda x, y: torch.nn.functional.cross_entropy(module(x), y),
        backend=backend, dynamic=False)


def timed_step(fn, module, x, y):
    t0 = time.perf_counter()
    fn(x, y).backward()
    ms = (time.perf_counter() - t0) * 1e3
    module.zero_grad(set_to_none=True)
    return ms


def remat_within(points, limit, key):
    """Remat's cheapest recorded schedule whose `key` is at most `limit`."""
    fits = [q for q in points if key(q) <= limit]
    return min(fits, key=lambda q: q["overhead"]) if fits else None


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models",
                   default="mlp,gpt,gpt512,resnet18,vgg16,mobilenet_v2,unet")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--remat-results", default=os.path.join(
        ROOT, "bench", "results", "torch-side-by-side.json"))
    p.add_argument("--out", default=os.path.join(
        ROOT, "bench", "results", "torch2-budget.json"))
    p.add_argument("--no-measure", action="store_true",
                   help="skip building and running Remat's picks")
    a = p.parse_args()
    if not torch.__version__.startswith("2."):
        sys.exit(f"torch {torch.__version__}: run this under PyTorch 2.x "
                 "(bench/torch2-setup.sh)")
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    sbs = side_by_side()
    table = sbs.models()
    remat = {r["model"]: r for r in json.load(open(a.remat_results))}
    mib = lambda b: b / 2 ** 20
    rows = []
    for name in a.models.split(","):
        builder, shape, vocab, _ = table[name]
        torch.manual_seed(0)
        module = builder().train()
        # Batch norm's running statistics are buffers the compiled forward
        # updates in place, which the recomputing backward then finds
        # changed (autograd's version check fails under a budget below 1);
        # batch statistics alone train the same way, with the same memory.
        for m in module.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.track_running_stats = False
                m.running_mean = m.running_var = m.num_batches_tracked = None
        x, y = sbs.make_data(shape, vocab, module)
        eager = lambda xx, yy: sbs.loss_fn(module, xx, yy)
        eager_bytes = sbs.saved_activation_bytes(module, x, y)
        for budget in BUDGETS:
            saved = []
            fn = compiled_loss(module, budget, saved)
            timed_step(fn, module, x, y)  # compiles
            eager_t, comp_t = [], []
            for _ in range(a.repeats):  # interleaved: noise hits both
                eager_t.append(timed_step(eager, module, x, y))
                comp_t.append(timed_step(fn, module, x, y))
            ratio = statistics.median(comp_t) / statistics.median(eager_t)
            peak = sbs.step_peak_bytes(module, x, y, fn)
            ref = remat.get(name, {})
            points = ref.get("remat_points", [])
            fixed = ref.get("remat_fixed_bytes", 0)
            rows.append({
                "model": name, "budget": budget,
                "eager_saved_bytes": eager_bytes, "saved_bytes": saved[-1],
                "step_peak_bytes": peak, "time_ratio": ratio,
                "remat_at_saved": remat_within(
                    points, saved[-1], lambda q: q["activation_bytes"]),
                # Remat's step above its parameters, inputs and labels.
                "remat_at_peak": remat_within(
                    points, peak, lambda q: q["peak_bytes"] - fixed),
                "remat_fixed_bytes": fixed})
            print(f"{name} {budget}: {mib(saved[-1]):.1f} MiB saved, "
                  f"peak {mib(peak):.1f} MiB, {ratio:.2f}x",
                  file=sys.stderr, flush=True)
        # Remat's picks built and run (remat-run, against its build without
        # remat, in turns), by bench/torch-side-by-side.py under Debian's
        # torch, which exports the model with the same seeds.
        picks = [q for r in rows if r["model"] == name
                 for q in (r["remat_at_saved"], r["remat_at_peak"]) if q]
        budgets = sorted({str(q["budget"]) for q in picks})
        if budgets and not a.no_measure:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                subprocess.run(
                    ["/usr/bin/python3",
                     os.path.join(ROOT, "bench", "torch-side-by-side.py"),
                     "--models", name, "--measure", ",".join(budgets),
                     "--repeats", str(a.repeats), "--out", out.name],
                    check=True)
                measured = json.load(open(out.name))
            for q in picks:
                q["time_ratio"], q["measured_peak_bytes"] = \
                    measured[str(q["budget"])]

    lines = [f"PyTorch {torch.__version__}, one thread.", "",
             "| model | activation_memory_budget | saved for backward | step peak "
             "| step time vs eager | Remat within those saved bytes: kept, extra "
             "FLOPs (predicted), step time (measured) | Remat within that step "
             "peak: peak predicted (measured), extra FLOPs (predicted), step "
             "time (measured) |",
             "|---|---|---|---|---|---|---|"]
    time_text = lambda q: (f", {q['time_ratio']:.2f}x" if "time_ratio" in q
                           else "")
    for r in rows:
        m, q = r["remat_at_saved"], r["remat_at_peak"]
        f = r["remat_fixed_bytes"]
        m_text = (f"{mib(m['activation_bytes']):.1f} MiB, "
                  f"+{100 * (m['overhead'] - 1):.1f}%{time_text(m)}"
                  if m else "not reached")
        q_measured = (f" ({mib(q['measured_peak_bytes'] - f):.1f})"
                      if q and "measured_peak_bytes" in q else "")
        q_text = (f"{mib(q['peak_bytes'] - f):.1f} MiB{q_measured}, "
                  f"+{100 * (q['overhead'] - 1):.1f}%{time_text(q)}"
                  if q else "not reached")
        lines.append(f"| {r['model']} | {r['budget']} | {mib(r['saved_bytes']):.1f} MiB "
                     f"(eager {mib(r['eager_saved_bytes']):.1f}) "
                     f"| {mib(r['step_peak_bytes']):.1f} MiB "
                     f"| {r['time_ratio']:.2f}x | {m_text} | {q_text} |")
    sbs.write_results(a.out, rows, "\n".join(lines),
                      "build/torch2-venv/bin/python bench/torch2-budget.py "
                      f"--models {a.models} --repeats {a.repeats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
