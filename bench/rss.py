#!/usr/bin/python3
"""The whole footprint beside the plan: for each example model without a
limit and at 75% and 50% of its no-remat peak, one step in remat-run with 1
and 2 threads (OPENBLAS_NUM_THREADS and REMAT_NUM_THREADS), the plan's
peak, the bytes the runtime counted, and the process's maximum RSS
(getrusage). RSS minus the plan is what no plan counts: the process's code
and libraries, the C library's allocator, and BLAS's per-thread buffers.

usage: bench/rss.py [--models mlp,resnet,unet,gpt] [--build build]
"""

import argparse
import json
import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="mlp,resnet,unet,gpt")
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    mib = 1 / (1 << 20)
    print("| model | limit | threads | plan peak MiB | counted MiB | "
          "max RSS MiB | RSS - plan MiB |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="remat-rss.") as tmp:
        for model in a.models.split(","):
            for limit in (None, "75%", "50%"):
                lib = pathlib.Path(tmp) / f"{model}-{limit or 'none'}.so"
                flags = [f"--memory-limit={limit}"] if limit else []
                subprocess.run([f"{a.build}/bin/remat-compile",
                                str(ROOT / "examples" / f"{model}.mlir"),
                                "-o", str(lib), *flags], check=True,
                               capture_output=True)
                for threads in (1, 2):
                    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
                               REMAT_NUM_THREADS=str(threads))
                    r = subprocess.run([f"{a.build}/bin/remat-run",
                                        str(lib.with_suffix(".json")),
                                        "--steps=1", "--json"], env=env,
                                       check=True, capture_output=True,
                                       text=True)
                    out = json.loads(r.stdout)
                    plan = out["predicted_peak_bytes"]
                    rss = out["max_rss_bytes"]
                    print(f"| {model} | {limit or 'none'} | {threads} | "
                          f"{plan * mib:.1f} | "
                          f"{out['measured_peak_bytes'] * mib:.1f} | "
                          f"{rss * mib:.1f} | {(rss - plan) * mib:.1f} |",
                          flush=True)


if __name__ == "__main__":
    main()
