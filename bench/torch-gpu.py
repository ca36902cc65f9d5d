#!/usr/bin/env python3
"""Remat beside PyTorch on one GPU: peak device memory and step time.

Two halves, because the GPU machine has no MLIR:

  bench/torch-gpu.py prepare [--models gpt512,resnet18] [--bundle DIR]
      here (Debian's torch, remat-compile): exports each zoo model of
      bench/torch-side-by-side.py, finds what checkpointing every block
      recomputes (Remat's cost model, through the exporter's locations) and
      its step peak (the CPU profiler's), and compiles three CUDA builds:
      without a limit; the lowest peak the `auto` solver reaches for no more
      extra compute than checkpointing (`extra`); and held to
      checkpointing's step peak (`peak`). Carries the example input and
      labels; parameters are remat-run's deterministic ones.
  bench/torch-gpu.py run [--bundle DIR] [--repeats N] [--out FILE.json]
      on the GPU machine (torch with CUDA, remat-run built with CMake): for
      each model, PyTorch eager and checkpoint-per-block (non-reentrant) in
      float32 with TF32 off for matmuls and convolutions (Remat's kernels
      are plain float32): the step's peak above what is allocated before it
      (torch.cuda.max_memory_allocated; parameters and input before, so
      gradients and activations count), the median time of forward +
      backward (CUDA events); then the three Remat builds through remat-run:
      the measured peak less parameters, inputs and labels (the same
      quantity), and the median device time of a step (forward, backward
      and the SGD update). Prints a markdown table; writes JSON.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_modules import side_by_side

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def checkpoint_blocks(blocks):
    """torch.utils.checkpoint (non-reentrant) around every block. (Not the
    CPU bench's wrapper, which also records each block's input for its byte
    count and so keeps the inputs alive until the step ends.)"""
    from torch.utils.checkpoint import checkpoint
    for b in blocks:
        b.forward = (lambda f: lambda *args: checkpoint(
            f, *args, use_reentrant=False))(b.forward)


def prepare(a):
    import torch
    sbs = side_by_side()
    torch.set_num_threads(1)
    bin_dir = os.path.join(a.build, "bin")
    table = sbs.models()
    plan = []
    os.makedirs(a.bundle, exist_ok=True)
    for name in a.models.split(","):
        builder, shape, vocab, blocks = table[name]
        torch.manual_seed(0)
        module = builder().train()
        x, y = sbs.make_data(shape, vocab, module)
        tmp = tempfile.mkdtemp()
        sbs.remat_export.export_to(module, x, y, "cross_entropy", tmp)
        mlir = os.path.join(tmp, "model.mlir")
        _, _, solve, fixed, graph = sbs.remat_points(bin_dir, mlir, tmp)
        names = {id(m): n for n, m in module.named_modules()}
        ck_extra = sbs.checkpoint_recompute(
            graph, [names[id(b)] for b in blocks(module)])
        ck = builder().train()
        ck.load_state_dict(module.state_dict())
        checkpoint_blocks(blocks(ck))
        ck_peak = sbs.step_peak_bytes(ck, x, y)
        at_extra = sbs.lowest_peak_within(solve, 1 + ck_extra + 1e-9)
        at_peak = solve(str(fixed + ck_peak))
        out = os.path.join(a.bundle, name)
        os.makedirs(out, exist_ok=True)
        for f in ("x.bin", "y.bin"):
            os.replace(os.path.join(tmp, f), os.path.join(out, f))
        builds = {"none": None, "extra": at_extra["budget"]}
        if at_peak["feasible"]:
            builds["peak"] = at_peak["budget"]
        for tag, budget in builds.items():
            cmd = [os.path.join(bin_dir, "remat-compile"), mlir,
                   "--target=cuda", "-o", os.path.join(out, tag + ".so")]
            if budget is not None:
                cmd.append(f"--memory-limit={budget}")
            subprocess.run(cmd, check=True, capture_output=True)
        plan.append({"model": name, "shape": shape, "vocab": vocab,
                     "checkpoint_extra_compute": ck_extra,
                     "checkpoint_cpu_peak": ck_peak, "fixed_bytes": fixed,
                     "builds": {k: v for k, v in builds.items()},
                     "extra_overhead": at_extra["overhead"],
                     "peak_overhead": at_peak["overhead"]
                     if at_peak["feasible"] else None})
        print(f"{name}: prepared", file=sys.stderr, flush=True)
    with open(os.path.join(a.bundle, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def torch_gpu(module, x, y, repeats, loss_fn):
    """(peak bytes above the step's start, median ms) of forward + backward
    on the GPU."""
    import torch
    for _ in range(3):
        loss_fn(module, x, y).backward()
        module.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loss_fn(module, x, y).backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    module.zero_grad(set_to_none=True)
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        loss_fn(module, x, y).backward()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        module.zero_grad(set_to_none=True)
    return peak, statistics.median(times)


def run(a):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sbs = side_by_side()
    table = sbs.models()
    plan = json.load(open(os.path.join(a.bundle, "plan.json")))
    remat_run = a.remat_run
    rows = []
    for p in plan:
        name = p["model"]
        builder, shape, vocab, blocks = table[name]
        torch.manual_seed(0)
        module = builder().train()
        x, y = sbs.make_data(shape, vocab, module)
        module, x, y = module.cuda(), x.cuda(), y.cuda()
        ck = builder().train()
        ck.load_state_dict(module.state_dict())
        ck = ck.cuda()
        checkpoint_blocks(blocks(ck))
        eager = torch_gpu(module, x, y, a.repeats, sbs.loss_fn)
        checkpointed = torch_gpu(ck, x, y, a.repeats, sbs.loss_fn)
        del module, ck
        torch.cuda.empty_cache()
        row = {"model": name, "eager_peak": eager[0], "eager_ms": eager[1],
               "checkpoint_peak": checkpointed[0],
               "checkpoint_ms": checkpointed[1],
               "checkpoint_extra_compute": p["checkpoint_extra_compute"],
               "extra_overhead": p["extra_overhead"],
               "peak_overhead": p["peak_overhead"], "remat": {}}
        folder = os.path.join(a.bundle, name)
        for tag in p["builds"]:
            r = subprocess.run([remat_run, os.path.join(folder, tag + ".json"),
                                f"--steps={a.repeats}", "--json",
                                f"--inputs-dir={folder}"],
                               capture_output=True, text=True, timeout=300)
            if r.returncode:
                row["remat"][tag] = {"error": (r.stderr or r.stdout)[-300:]}
                continue
            d = json.loads(r.stdout.strip().splitlines()[-1])
            row["remat"][tag] = {
                "peak_above_fixed": d["measured_peak_bytes"] - d["fixed_bytes"],
                "predicted_above_fixed":
                    d["predicted_peak_bytes"] - d["fixed_bytes"],
                "device_ms": d["median_device_ms"],
                "predicted_overhead": d["predicted_overhead"]}
        rows.append(row)
        print(f"{name}: done", file=sys.stderr, flush=True)
    mib = lambda b: f"{b / 2 ** 20:.1f}"
    gpu = torch.cuda.get_device_name()
    lines = [f"{gpu}, torch {torch.__version__}, float32 (TF32 off); peaks "
             "in MiB above the step's start (Remat: measured, less "
             "parameters, inputs and labels); times: median ms of a step.", "",
             "| model | eager: peak, ms | checkpoint/block: peak, ms "
             "(recomputes) | Remat, no limit: peak, ms | Remat at "
             "checkpoint's extra compute: peak, ms (predicted extra) | Remat "
             "held to checkpoint's CPU peak: peak, ms (predicted extra) |",
             "|---|---|---|---|---|---|"]

    def cell(row, tag, overhead=None):
        q = row["remat"].get(tag)
        if q is None:
            return "not reached"
        if "error" in q:
            return "error: " + q["error"][:80]
        extra = (f" (+{100 * (q['predicted_overhead'] - 1):.1f}%)"
                 if overhead else "")
        return f"{mib(q['peak_above_fixed'])}, {q['device_ms']:.2f}{extra}"
    for r in rows:
        lines.append(
            f"| {r['model']} | {mib(r['eager_peak'])}, {r['eager_ms']:.2f} "
            f"| {mib(r['checkpoint_peak'])}, {r['checkpoint_ms']:.2f} "
            f"(+{100 * r['checkpoint_extra_compute']:.1f}%) "
            f"| {cell(r, 'none')} | {cell(r, 'extra', True)} "
            f"| {cell(r, 'peak', True)} |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "rows": rows},
                      f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["prepare", "run"])
    p.add_argument("--models", default="mlp,gpt,gpt512,resnet18,unet")
    p.add_argument("--bundle", default=os.path.join(ROOT, "build", "torch-gpu"))
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--remat-run",
                   default=os.path.join(ROOT, "build", "bin", "remat-run"))
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--out")
    a = p.parse_args()
    return prepare(a) if a.mode == "prepare" else run(a)


if __name__ == "__main__":
    sys.exit(main())
