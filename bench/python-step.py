#!/usr/bin/python3
"""A step driven from Python (remat.Step over the runtime's C API) against
the same compiled step in remat-run, side by side: the demo MLP
(examples/mlp.mlir) at 50% of its peak, ROUNDS rounds of STEPS steps each,
alternating. remat-run's figure is its median step time; Python's is the
median wall-clock time of `step(x, y)`, binding the batch included.

usage: bench/python-step.py [--rounds 3] [--steps 3] [--model examples/mlp.mlir]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import remat  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--model", default=str(ROOT / "examples" / "mlp.mlir"))
    p.add_argument("--limit", default="50%")
    a = p.parse_args()
    build = pathlib.Path(os.environ.get("REMAT_BUILD", ROOT / "build"))
    work = pathlib.Path(tempfile.mkdtemp(prefix="remat-python-step."))
    so = work / "step.so"
    subprocess.run([str(build / "bin" / "remat-compile"), a.model, "-o",
                    str(so), f"--memory-limit={a.limit}"], check=True)
    manifest = work / "step.json"
    step = remat.Step(str(manifest))
    args = step.manifest["arguments"]
    batch = []
    g = torch.Generator().manual_seed(0)
    for spec in args:
        if spec["role"] in ("input", "label"):
            dtype = {"f32": torch.float32, "f64": torch.float64}[spec["dtype"]]
            batch.append(torch.rand(spec["shape"], dtype=dtype, generator=g))
    run_ms, py_ms = [], []
    for _ in range(a.rounds):
        r = subprocess.run([str(build / "bin" / "remat-run"), str(manifest),
                            f"--steps={a.steps}", "--json"],
                           capture_output=True, text=True, check=True)
        run_ms.append(json.loads(r.stdout)["median_step_ms"])
        times = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step(*batch)
            times.append((time.perf_counter() - t0) * 1e3)
        py_ms.append(statistics.median(times))
    report = step.report()
    rr, pp = statistics.median(run_ms), statistics.median(py_ms)
    print(f"model {a.model} at {a.limit}: {a.rounds} rounds of {a.steps} steps")
    print("| driver | median step ms | per round |")
    print("|---|---|---|")
    print(f"| remat-run | {rr:.1f} | {', '.join(f'{v:.1f}' for v in run_ms)} |")
    print(f"| Python (remat.Step) | {pp:.1f} | "
          f"{', '.join(f'{v:.1f}' for v in py_ms)} |")
    print(f"Python / remat-run: {pp / rr:.3f}")
    print(f"measured peak in Python {report['measured_peak_bytes']} bytes, "
          f"predicted {report['predicted_peak_bytes']}")


if __name__ == "__main__":
    main()
