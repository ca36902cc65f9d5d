#!/usr/bin/python3
"""Data-parallel training with Remat on an existing engine: each process
runs the step's backward part (under the memory limit) on its share of the
batch, the gradients are averaged with torch.distributed (gloo on the CPU),
and each process applies the optimizer's update. Launched here with
torch.multiprocessing on 2 CPU processes (torchrun works the same way: each
rank runs `worker`).

Every rank must make the same plan: the compile is deterministic, and the
example checks that the ranks' plans (the manifests of both parts) hash the
same. In float64, the parameters after the steps must match one process
training on the whole batch (non-split step) to 1e-10.

usage: examples/train_ddp.py [--steps 4] [--batch 32] [--limit 75%]
Needs PYTHONPATH=python. Exit status 0 when both checks hold.
"""

import argparse
import hashlib
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import remat


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.Tanh(),
        torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 5)).double()


def batch(seed, size):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(size, 1, 8, 8, dtype=torch.float64, generator=g),
            torch.randint(0, 5, (size,), generator=g))


def optimizer():
    return remat.AdamW(lr=1e-2, weight_decay=0.01)


def plan_hash(step):
    h = hashlib.sha256()
    for part in (step._main, step._apply):
        h.update(repr(sorted(part.manifest.items())).encode())
    return h.hexdigest()


def worker(rank, world, args, out):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    share = args.batch // world
    x0, y0 = batch(0, args.batch)
    step = remat.compile(model(), (x0[:share], y0[:share]),
                         optimizer=optimizer(), memory_limit=args.limit,
                         data_parallel=True)
    hashes = [None] * world
    dist.all_gather_object(hashes, plan_hash(step))
    for k in range(1, args.steps + 1):
        x, y = batch(k, args.batch)
        mine = slice(rank * share, (rank + 1) * share)
        grads = step.backward(x[mine].contiguous(), y[mine].contiguous())
        for g in grads.values():
            dist.all_reduce(g)
            g /= world
        step.apply(grads)
    if rank == 0:
        torch.save({"hashes": hashes, "state": step.state_dict(),
                    "report": dict(step.report())}, out)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", default="75%")
    p.add_argument("--world", type=int, default=2)
    a = p.parse_args()
    os.environ["MASTER_PORT"] = os.environ.get("MASTER_PORT", "29517")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rank0.pt")
        mp.spawn(worker, args=(a.world, a, out), nprocs=a.world, join=True)
        result = torch.load(out)
    agree = len(set(result["hashes"])) == 1
    print(f"{a.world} processes, batch {a.batch} split in {a.world}, "
          f"{a.steps} steps, AdamW, float64, limit {a.limit}")
    report = result["report"]
    print(f"backward part: predicted peak {report['predicted_peak_bytes']} "
          f"bytes, measured {report['measured_peak_bytes']}, compute "
          f"{report['predicted_overhead']:.3f}x")
    print(f"plans agree across ranks: {'yes' if agree else 'no'}")

    # One process on the whole batch, the step not split.
    x0, y0 = batch(0, a.batch)
    single = remat.compile(model(), (x0, y0), optimizer=optimizer())
    for k in range(1, a.steps + 1):
        single(*batch(k, a.batch))
    expected = single.state_dict()
    worst = max(float((result["state"][n] - expected[n]).abs().max()
                      / expected[n].abs().max())
                for n in dict(model().named_parameters()))
    match = worst < 1e-10
    print(f"parameters vs one process on the whole batch: max relative "
          f"difference {worst:.2e}, within 1e-10: {'yes' if match else 'no'}")
    return 0 if agree and match else 1


if __name__ == "__main__":
    sys.exit(main())
