#!/usr/bin/python3
"""The arena plan against the malloc build: for each example model and
each PyTorch zoo model (python/zoo.py, exported), without a limit and at
75% and 50% of its no-remat peak, compiles the step with
--memory-plan=malloc and --memory-plan=arena and prints the arena, its
buffers' live peak and their ratio, the step's predicted and measured
peak, the process's maximum RSS beyond the plan at 1 and 2 threads
(OPENBLAS_NUM_THREADS and REMAT_NUM_THREADS), and the median step time of
both builds over interleaved runs at one thread.

usage: bench/arena.py [--models mlp,resnet,...] [--rounds 3] [--build build]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ["mlp", "resnet", "unet", "gpt"]
# Zoo models at the float64 oracle's shapes (test/Integration/CPU/
# torch-oracle.py), exported in float32: name -> (input shape, vocabulary).
ZOO = {"zoo_mlp": ("mlp", [256, 32], 0),
       "zoo_small_resnet": ("small_resnet", [16, 3, 16, 16], 0),
       "zoo_unet": ("unet", [2, 3, 16, 16], 0),
       "zoo_gpt": ("gpt", [8, 16], 64),
       "zoo_transformer_encoder": ("transformer_encoder", [8, 16, 32], 0),
       "zoo_lstm": ("lstm", [8, 12, 8], 0)}


def model_source(model, tmp):
    """The MLIR of an example or zoo model and, for a zoo model, the
    directory of its exported inputs (None for an example)."""
    if model not in ZOO:
        return ROOT / "examples" / f"{model}.mlir", None
    name, shape, vocab = ZOO[model]
    inputs = tmp / model
    cmd = ["/usr/bin/python3", str(ROOT / "python" / "remat_export.py"),
           name, "--input-shape", ",".join(map(str, shape)), "-o", str(inputs)]
    if vocab:
        cmd += ["--input-dtype", "i64", "--vocab", str(vocab)]
    subprocess.run(cmd, check=True, capture_output=True)
    return inputs / "model.mlir", inputs


def run(build, manifest, threads, inputs=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               REMAT_NUM_THREADS=str(threads))
    cmd = [f"{build}/bin/remat-run", str(manifest), "--steps=2", "--json"]
    if inputs:
        cmd.append(f"--inputs-dir={inputs}")
    r = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(EXAMPLES + list(ZOO)))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    mib = 1 / (1 << 20)
    print("| model | limit | arena MiB | live MiB | arena / live | predicted = "
          "measured MiB | RSS - plan MiB (1 thread) | (2 threads) | "
          "malloc ms | arena ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="remat-arena.") as tmp:
        tmp = pathlib.Path(tmp)
        for model in a.models.split(","):
            src, inputs = model_source(model, tmp)
            for limit in (None, "75%", "50%"):
                builds = {}
                for plan in ("malloc", "arena"):
                    lib = tmp / f"{model}-{limit or 'none'}-{plan}.so"
                    flags = [f"--memory-limit={limit}"] if limit else []
                    c = subprocess.run([f"{a.build}/bin/remat-compile", str(src),
                                        "-o", str(lib), f"--memory-plan={plan}",
                                        *flags], capture_output=True, text=True)
                    if c.returncode:
                        error = c.stderr.split("error: ")[-1].splitlines()[0]
                        builds[plan] = error
                    else:
                        builds[plan] = lib.with_suffix(".json")
                if any(isinstance(b, str) for b in builds.values()):
                    print(f"| {model} | {limit} | " + " | ".join(
                        f"{plan}: {b}" for plan, b in builds.items()
                        if isinstance(b, str)) + " | | | | | | | |", flush=True)
                    continue
                times = {"malloc": [], "arena": []}
                for _ in range(a.rounds):
                    for plan in ("malloc", "arena"):
                        out = run(a.build, builds[plan], 1, inputs)
                        times[plan].append(out["step_ms"][-1])
                m = json.load(open(builds["arena"]))
                one = run(a.build, builds["arena"], 1, inputs)
                two = run(a.build, builds["arena"], 2, inputs)
                size, live = m.get("arena_bytes", 0), m.get("arena_live_bytes", 0)
                ratio = f"{size / live:.4f}" if live else "no buffers"
                pred, meas = one["predicted_peak_bytes"], one["measured_peak_bytes"]
                same = f"{pred * mib:.1f}" if pred == meas else \
                    f"{pred * mib:.1f} != {meas * mib:.1f}"
                print(f"| {model} | {limit or 'none'} | {size * mib:.1f} | "
                      f"{live * mib:.1f} | {ratio} | {same} | "
                      f"{(one['max_rss_bytes'] - pred) * mib:.1f} | "
                      f"{(two['max_rss_bytes'] - pred) * mib:.1f} | "
                      f"{statistics.median(times['malloc']):.1f} | "
                      f"{statistics.median(times['arena']):.1f} |", flush=True)


if __name__ == "__main__":
    main()
