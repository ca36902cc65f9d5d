#!/usr/bin/python3
"""Remat beside PyTorch's own activation-memory tools, model by model.

For each zoo model (float32, 1 thread, same machine, same run):
  eager       PyTorch autograd: activation bytes saved for backward
              (saved_tensors_hooks, storages counted once, parameters and the
              input excluded) and the median step time (forward + backward);
  checkpoint  torch.utils.checkpoint around every block (non-reentrant):
              the same two figures;
  min-cut     functorch's AOT autograd with min_cut_rematerialization_partition:
              activation bytes the forward graph hands to the backward graph;
  remat       the model exported to the train dialect, scheduled by the
              `auto` solver under a sweep of budgets: the activation bytes
              resident when the backward pass starts (the same quantity:
              what the forward pass leaves for the backward, arguments
              excluded), predicted step peak, and extra compute in FLOPs
              predicted by the cost model.
Three tables: at checkpointing's saved bytes, Remat's cheapest schedule that
leaves no more; at checkpointing's extra compute (the forward ops of the
checkpointed blocks, by Remat's cost model, found through the locations the
exporter writes), Remat's lowest peak for no more; and at checkpointing's
step peak (PyTorch's from the
profiler's memory events, Remat's predicted peak less parameters, inputs and
labels), Remat held to it, with the peak remat-run measured beside the
predicted one. Remat's step times are measured against its own build
without remat, in turns.

PyTorch 2.x's activation memory budget is not in Debian's torch 1.13 and is
not measured here. Prints markdown; writes it next to --out (JSON).

usage: bench/torch-side-by-side.py [--build build] [--models gpt,resnet18]
                                   [--shape resnet18=4,3,224,224 ...]
                                   [--out bench/results/torch-side-by-side.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import remat_export  # noqa: E402
import zoo  # noqa: E402


def models():
    """name -> (builder, input shape, vocab or 0, blocks(model) to checkpoint)"""
    return {
        # Blocks of two Linear+ReLU layers (a one-layer block saves what
        # eager saves: its input).
        "mlp": (lambda: _grouped(zoo.mlp(layers=20, width=512, classes=512), 4),
                [1024, 512], 0, lambda m: list(m)),
        "gpt": (lambda: zoo.gpt(layers=6, width=256, heads=4, seq=128, vocab=512),
                [8, 128], 512, lambda m: list(m.blocks)),
        # The realistic size: 6 layers, d=512, sequence 256.
        "gpt512": (lambda: zoo.gpt(layers=6, width=512, heads=8, seq=256,
                                   vocab=512),
                   [8, 256], 512, lambda m: list(m.blocks)),
        "resnet18": (lambda: torchvision.models.resnet18(num_classes=10),
                     [16, 3, 64, 64], 0,
                     lambda m: [b for l in (m.layer1, m.layer2, m.layer3, m.layer4)
                                for b in l]),
        "unet": (lambda: zoo.unet(depth=3, width=16), [4, 3, 64, 64], 0,
                 lambda m: list(m.down) + [m.bottom] + list(m.up)),
        # At 32x32 the conv stack ends at 1x1, which the adaptive pool
        # replicates to 7x7 for the full classifier (134M parameters).
        "vgg16": (_vgg16_stages, [16, 3, 32, 32], 0,
                  lambda m: list(m.features)),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10),
                         [16, 3, 64, 64], 0, lambda m: list(m.features)),
    }


def _vgg16_stages():
    """torchvision's VGG16, its conv stack grouped into its five stages (the
    convolutions and the pool that ends each), to checkpoint one by one."""
    model = torchvision.models.vgg16(num_classes=10)
    stages, layers = [], []
    for layer in model.features:
        layers.append(layer)
        if isinstance(layer, torch.nn.MaxPool2d):
            stages.append(torch.nn.Sequential(*layers))
            layers = []
    model.features = torch.nn.Sequential(*stages)
    return model


def _grouped(seq, n):
    return torch.nn.Sequential(*(torch.nn.Sequential(*list(seq)[i:i + n])
                                 for i in range(0, len(seq), n)))


def make_data(shape, vocab, module):
    torch.manual_seed(0)
    x = torch.randint(0, vocab, shape) if vocab else torch.randn(shape)
    with torch.no_grad():
        out = module(x)
    return x, torch.randint(0, out.shape[-1], out.shape[:1])


def loss_fn(module, x, y):
    return torch.nn.functional.cross_entropy(module(x), y)


def saved_activation_bytes(module, x, y):
    exclude = {p.data_ptr() for p in module.parameters()} | {x.data_ptr()}
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") \
            else t.storage().data_ptr()
        if t.data_ptr() not in exclude and ptr not in exclude:
            seen[ptr] = max(seen.get(ptr, 0), t.storage().nbytes())
        return t

    CHECKPOINT_INPUTS.clear()
    RECORD_INPUTS[0] = True
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn(module, x, y)
    RECORD_INPUTS[0] = False
    for t in CHECKPOINT_INPUTS:
        pack(t)
    CHECKPOINT_INPUTS.clear()
    loss.backward()
    module.zero_grad(set_to_none=True)
    return sum(seen.values())


def step_peak_bytes(module, x, y, loss=None):
    """Peak bytes allocated during one step above what existed before it
    (parameters, input), from the profiler's memory events. `loss(x, y)`
    is the step's loss function (default: the module's, eager)."""
    from torch.profiler import ProfilerActivity, profile
    loss = loss or (lambda xx, yy: loss_fn(module, xx, yy))
    loss(x, y).backward()  # warm up
    module.zero_grad(set_to_none=True)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss(x, y).backward()
    module.zero_grad(set_to_none=True)
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]"]
    # PyTorch 2.x names the event time start_ns, 1.13 start_us.
    start = (lambda e: e.start_ns()) if events and hasattr(events[0], "start_ns") \
        else (lambda e: e.start_us())
    total = peak = 0
    for e in sorted(events, key=start):
        total += e.nbytes()
        peak = max(peak, total)
    return peak


def step_ms(module, x, y, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        loss_fn(module, x, y).backward()
        times.append((time.perf_counter() - t0) * 1e3)
        module.zero_grad(set_to_none=True)
    return statistics.median(times)


# Inputs that checkpointed blocks keep for their recomputation: checkpoint
# holds them outside autograd's saved tensors, so the hooks do not see them.
# Recorded only while saved_activation_bytes counts, so that the timed and
# profiled steps do not keep them alive after their blocks' backward.
CHECKPOINT_INPUTS = []
RECORD_INPUTS = [False]


def with_checkpoints(blocks):
    from torch.utils.checkpoint import checkpoint

    def wrap(f):
        def run(*a):
            if RECORD_INPUTS[0]:
                CHECKPOINT_INPUTS.extend(t for t in a
                                         if isinstance(t, torch.Tensor))
            return checkpoint(f, *a, use_reentrant=False)
        return run
    for b in blocks:
        b.forward = wrap(b.forward)


def mincut_saved_bytes(module, x, y):
    from functorch import make_functional_with_buffers
    from functorch.compile import aot_function, min_cut_rematerialization_partition
    fmodel, params, buffers = make_functional_with_buffers(module)
    saved = []

    def fw_compiler(gm, example_inputs):
        def run(*args):
            outs = gm(*args)
            ptrs = {a.data_ptr() for a in args if isinstance(a, torch.Tensor)}
            saved.append(sum(o.storage().nbytes() for o in outs[1:]
                             if isinstance(o, torch.Tensor) and
                             o.data_ptr() not in ptrs))
            return outs
        return run

    f = aot_function(lambda p, b, xx, yy: torch.nn.functional.cross_entropy(
        fmodel(p, b, xx), yy), fw_compiler=fw_compiler,
        bw_compiler=lambda gm, _: gm,
        partition_fn=min_cut_rematerialization_partition)
    f(params, buffers, x, y).backward()
    return saved[-1]


def remat_points(bin_dir, mlir, tmp):
    graph = os.path.join(tmp, "graph.json")
    subprocess.run([os.path.join(bin_dir, "remat-compile"), mlir, "--emit=graph",
                    "-o", graph], check=True, capture_output=True)
    g = json.load(open(graph))
    nodes = {n["id"]: n for n in g["nodes"]}

    def solve(budget, solver="auto"):
        # Exit status 2 means infeasible; the JSON says so too.
        r = subprocess.run([os.path.join(bin_dir, "remat-solve"), graph,
                            f"--budget={budget}", "--json", f"--solver={solver}"],
                           capture_output=True, text=True)
        if r.returncode not in (0, 2):
            raise RuntimeError(r.stderr)
        d = json.loads(r.stdout)
        live, act = set(), None
        for kind, node in d["schedule"]:
            if kind == "compute" and nodes[node]["backward"] and act is None:
                act = sum(nodes[n]["cost_ram"] for n in live
                          if not nodes[n].get("argument"))
            (live.add if kind == "compute" else live.discard)(node)
        return {"feasible": d["feasible"], "activation_bytes": act,
                "peak_bytes": d["peak_bytes"], "overhead": d["overhead"],
                "budget": d["budget_bytes"], "solve_ms": d["solve_ms"]}

    # A sweep of budgets; each schedule's kept activations and overhead.
    points = [p for p in (solve(f"{f / 100:.2f}x") for f in range(100, 4, -5))
              if p["feasible"]]

    def refine(target):
        """Bisects the budget for the largest one whose schedule keeps at
        most `target` bytes (overhead falls as the budget grows)."""
        lo, hi = 0.0, 1.0
        for _ in range(14):
            mid = (lo + hi) / 2
            q = solve(f"{mid:.6f}x")
            if q["feasible"]:
                points.append(q)
            if q["feasible"] and q["activation_bytes"] <= target:
                lo = mid
            else:
                hi = mid
    fixed = sum(n["cost_ram"] for n in g["nodes"] if n.get("argument"))
    return points, refine, solve, fixed, g


def checkpoint_recompute(graph, paths):
    """What checkpointing the modules at `paths` recomputes, as a fraction
    of the step's compute by Remat's cost model: the forward ops exported
    from inside them (their locations name the module), each run once more
    in the backward pass."""
    def inside(source):
        return any(source == p or source.startswith(p + ".") for p in paths)
    nodes = [n for n in graph["nodes"] if not n.get("argument")]
    extra = sum(n["cost_cpu"] for n in nodes
                if not n["backward"] and inside(n.get("source", "")))
    return extra / sum(n["cost_cpu"] for n in nodes)


def lowest_peak_within(solve, overhead):
    """Bisects the budget for the smallest one at which auto's schedule
    costs at most `overhead` (total over no-remat compute)."""
    lo, hi, best = 0.0, 1.0, solve("1.0x")
    for _ in range(14):
        mid = (lo + hi) / 2
        q = solve(f"{mid:.6f}x")
        if q["feasible"] and q["overhead"] <= overhead:
            hi, best = mid, q
        else:
            lo = mid
    return best


def remat_time_ratio(bin_dir, tmp, budget, steps):
    """Median step time at `budget` over the no-remat build's, run in turn,
    and the remat build's peak as remat-run measured it."""
    runs = {}
    for tag, extra in (("none", []), ("remat", [f"--memory-limit={budget}"])):
        lib = os.path.join(tmp, f"{tag}.so")
        subprocess.run([os.path.join(bin_dir, "remat-compile"),
                        os.path.join(tmp, "model.mlir"), "-o", lib] + extra,
                       check=True, capture_output=True)
        runs[tag] = lib[:-3] + ".json"
    times = {"none": [], "remat": []}
    measured = None
    for _ in range(steps):
        for tag in ("none", "remat"):
            r = subprocess.run([os.path.join(bin_dir, "remat-run"), runs[tag],
                                "--steps=1", "--json", f"--inputs-dir={tmp}"],
                               check=True, capture_output=True, text=True)
            out = json.loads(r.stdout)
            times[tag].append(out["median_step_ms"])
            if tag == "remat":
                measured = out["measured_peak_bytes"]
    ratio = statistics.median(times["remat"]) / statistics.median(times["none"])
    return ratio, measured


def write_results(out, rows, text, command):
    """Prints the markdown `text`; writes `rows` to `out` (JSON) and the
    text, with the `command` that printed it, next to it (.md)."""
    print(text)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write(f"Printed by `{command}`:\n\n{text}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--models",
                   default="mlp,gpt,gpt512,resnet18,vgg16,mobilenet_v2,unet")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--shape", action="append", default=[],
                   metavar="MODEL=D0,D1,...",
                   help="input shape for MODEL instead of its default "
                        "(e.g. resnet18=4,3,224,224); repeatable")
    p.add_argument("--measure", metavar="BUDGETS",
                   help="only build each model of --models under these "
                        "budgets in bytes (comma-separated) and measure them "
                        "against its build without remat; writes "
                        "{budget: [step time ratio, measured peak]} to --out "
                        "(used by bench/torch2-budget.py)")
    default_out = os.path.join(ROOT, "bench", "results",
                               "torch-side-by-side.json")
    p.add_argument("--out", default=default_out)
    a = p.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    bin_dir = os.path.join(a.build, "bin")
    table = models()
    for spec in a.shape:
        name, _, dims = spec.partition("=")
        if name not in table or not dims:
            p.error(f"--shape {spec!r}: expected MODEL=D0,D1,... for one of "
                    f"{', '.join(table)}")
        builder, _, vocab, blocks = table[name]
        table[name] = (builder, [int(d) for d in dims.split(",")], vocab, blocks)
    def exported(name):
        """The seeded model, its data, and its export in a fresh folder."""
        builder, shape, vocab, _ = table[name]
        torch.manual_seed(0)
        module = builder().train()
        x, y = make_data(shape, vocab, module)
        tmp = tempfile.mkdtemp()
        remat_export.export_to(module, x, y, "cross_entropy", tmp)
        return module, x, y, tmp

    if a.measure:
        measured = {}
        for name in a.models.split(","):
            tmp = exported(name)[3]
            for budget in a.measure.split(","):
                measured[budget] = remat_time_ratio(bin_dir, tmp, budget,
                                                    a.repeats)
        with open(a.out, "w") as f:
            json.dump(measured, f)
        return 0
    rows = []
    mib = lambda b: b / 2 ** 20
    for name in a.models.split(","):
        builder, _, _, blocks = table[name]
        module, x, y, tmp = exported(name)
        points, refine, solve, fixed, graph = remat_points(
            bin_dir, os.path.join(tmp, "model.mlir"), tmp)
        names = {id(m): n for n, m in module.named_modules()}
        ck_extra = checkpoint_recompute(graph,
                                        [names[id(b)] for b in blocks(module)])
        eager_bytes = saved_activation_bytes(module, x, y)
        eager_peak = step_peak_bytes(module, x, y)

        mincut = mincut_saved_bytes(module, x, y)
        ck = builder().train()
        ck.load_state_dict(module.state_dict())
        with_checkpoints(blocks(ck))
        ck_bytes = saved_activation_bytes(ck, x, y)
        ck_peak = step_peak_bytes(ck, x, y)
        # Interleaved, so that machine noise hits both alike.
        eager_t, ck_t = [], []
        for _ in range(a.repeats):
            eager_t.append(step_ms(module, x, y, 1))
            ck_t.append(step_ms(ck, x, y, 1))
        eager_ms, ck_ms = statistics.median(eager_t), statistics.median(ck_t)

        refine(ck_bytes)

        def best_within(limit):
            fits = [q for q in points if q["activation_bytes"] <= limit]
            return min(fits, key=lambda q: q["overhead"]) if fits else None

        pick = best_within(ck_bytes)
        remat_ratio = None
        if pick:
            remat_ratio, pick["measured_peak_bytes"] = remat_time_ratio(
                bin_dir, tmp, pick["budget"], a.repeats)

        # Same peak: Remat's step above its fixed part (parameters, inputs,
        # labels) held to what checkpointing's step allocates above its own.
        at_peak = solve(str(fixed + ck_peak))
        at_peak_ratio = None
        if at_peak["feasible"]:
            at_peak_ratio, at_peak["measured_peak_bytes"] = remat_time_ratio(
                bin_dir, tmp, at_peak["budget"], a.repeats)
        base = solve("1.0x")
        # Same extra compute: Remat's lowest peak for no more recomputation
        # than checkpointing does, both by Remat's cost model.
        at_extra = lowest_peak_within(solve, 1 + ck_extra + 1e-9)
        at_extra_ratio, at_extra["measured_peak_bytes"] = remat_time_ratio(
            bin_dir, tmp, at_extra["budget"], a.repeats)

        row = {"model": name,
               "eager_peak": eager_peak, "checkpoint_peak": ck_peak,
               "remat_base_peak_above_fixed": base["peak_bytes"] - fixed,
               "remat_at_checkpoint_peak": at_peak,
               "remat_at_checkpoint_peak_time_ratio": at_peak_ratio,
               "checkpoint_extra_compute": ck_extra,
               "remat_at_checkpoint_extra": at_extra,
               "remat_at_checkpoint_extra_time_ratio": at_extra_ratio,
               "remat_fixed_bytes": fixed, "eager_bytes": eager_bytes, "eager_ms": eager_ms,
               "checkpoint_bytes": ck_bytes, "checkpoint_time_ratio": ck_ms / eager_ms,
               "mincut_bytes": mincut,
               "remat_at_eager": best_within(eager_bytes),
               "remat_at_checkpoint": pick,
               "remat_time_ratio": remat_ratio,
               "remat_smallest": min(points, key=lambda q: q["activation_bytes"]),
               "remat_points": points}
        rows.append(row)
        print(f"{name}: done", file=sys.stderr, flush=True)

    lines = ["| model | PyTorch eager saved | min-cut saved | checkpoint/block: saved, "
             "step time | Remat within checkpoint's bytes: kept, extra FLOPs (predicted), "
             "step time (measured) |",
             "|---|---|---|---|---|"]
    for r in rows:
        rc = r["remat_at_checkpoint"]
        rc_text = (f"{mib(rc['activation_bytes']):.1f} MiB, "
                   f"+{100 * (rc['overhead'] - 1):.1f}%, {r['remat_time_ratio']:.2f}x"
                   if rc else
                   "not reached (least kept: "
                   f"{mib(r['remat_smallest']['activation_bytes']):.1f} MiB, "
                   f"+{100 * (r['remat_smallest']['overhead'] - 1):.1f}%)")
        lines.append(
            f"| {r['model']} | {mib(r['eager_bytes']):.1f} MiB "
            f"| {mib(r['mincut_bytes']):.1f} MiB "
            f"| {mib(r['checkpoint_bytes']):.1f} MiB, {r['checkpoint_time_ratio']:.2f}x "
            f"| {rc_text} |")
    lines += ["", "| model | PyTorch eager step peak | checkpoint/block step peak, "
              "step time | Remat without remat: step peak | Remat held to checkpoint's "
              "peak: peak predicted (measured), extra FLOPs (predicted), step time "
              "(measured) |",
              "|---|---|---|---|---|"]
    for r in rows:
        q = r["remat_at_checkpoint_peak"]
        q_text = (f"{mib(q['peak_bytes'] - r['remat_fixed_bytes']):.1f} MiB "
                  f"({mib(q['measured_peak_bytes'] - r['remat_fixed_bytes']):.1f}), "
                  f"+{100 * (q['overhead'] - 1):.1f}%, "
                  f"{r['remat_at_checkpoint_peak_time_ratio']:.2f}x"
                  if q["feasible"] else "cannot")
        lines.append(
            f"| {r['model']} | {mib(r['eager_peak']):.1f} MiB "
            f"| {mib(r['checkpoint_peak']):.1f} MiB, {r['checkpoint_time_ratio']:.2f}x "
            f"| {mib(r['remat_base_peak_above_fixed']):.1f} MiB | {q_text} |")
    lines += ["", "| model | checkpoint/block: recomputes (cost model), step peak, "
              "step time | Remat within that extra compute: step peak predicted "
              "(measured), extra FLOPs (predicted), step time (measured) |",
              "|---|---|---|"]
    for r in rows:
        q, f = r["remat_at_checkpoint_extra"], r["remat_fixed_bytes"]
        lines.append(
            f"| {r['model']} | +{100 * r['checkpoint_extra_compute']:.1f}%, "
            f"{mib(r['checkpoint_peak']):.1f} MiB, {r['checkpoint_time_ratio']:.2f}x "
            f"| {mib(q['peak_bytes'] - f):.1f} MiB "
            f"({mib(q['measured_peak_bytes'] - f):.1f}), "
            f"+{100 * (q['overhead'] - 1):.1f}%, "
            f"{r['remat_at_checkpoint_extra_time_ratio']:.2f}x |")
    write_results(a.out, rows, "\n".join(lines),
                  f"bench/torch-side-by-side.py --models {a.models} "
                  f"--repeats {a.repeats}"
                  + "".join(f" --shape {x}" for x in a.shape)
                  + (f" --out {os.path.relpath(a.out, ROOT)}"
                     if a.out != default_out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
