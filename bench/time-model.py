#!/usr/bin/python3
"""How well the cost models predict time: for each example model and each
PyTorch zoo model (bench/arena.py's shapes, float32), at 75% and 50% of the
no-remat peak and at checkpoint-per-block's peak (remat-solve's every-layer
schedule without a budget), builds the step priced by FLOPs, by the roofline
(built-in or --target-desc) and by a profile of the no-limit build
(remat-compile --profile-ops, remat-run --profile), runs them and the
no-limit build in interleaved rounds (OPENBLAS_NUM_THREADS=1; each run at
least --min-ms of steps, its fastest after the first, which other
processes disturb least), and prints each
build's predicted and measured step-time overhead over the no-limit build
(median of the rounds; the spread of the no-limit build's rounds is the
noise) and the time-priced builds' step time over the FLOP-priced one's.

usage: bench/time-model.py [--models mlp,...] [--rounds 5] [--min-ms 300]
       [--target-desc FILE] [--build build]
"""

import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
arena = __import__("arena")
MODELS = ("flops", "roofline", "profile")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(arena.EXAMPLES + list(arena.ZOO)))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-ms", type=float, default=300)
    p.add_argument("--target-desc", default=None)
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", REMAT_NUM_THREADS="1")
    bin_ = pathlib.Path(a.build) / "bin"
    desc = [f"--target-desc={a.target_desc}"] if a.target_desc else []
    print("| model | limit | no-limit ms (spread) | FLOPs: predicted | measured "
          "| roofline: predicted | measured | profile: predicted | measured "
          "| roofline ms / FLOPs ms | profile ms / FLOPs ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    errors = {k: [] for k in MODELS}
    with tempfile.TemporaryDirectory(prefix="remat-time.") as tmp:
        tmp = pathlib.Path(tmp)
        for model in a.models.split(","):
            src, inputs = arena.model_source(model, tmp)
            extra = [f"--inputs-dir={inputs}"] if inputs else []

            def build(tag, flags):
                lib = tmp / f"{model}-{tag}.so"
                c = subprocess.run([str(bin_ / "remat-compile"), str(src),
                                    "-o", str(lib), *flags],
                                   capture_output=True, text=True)
                if c.returncode:
                    return c.stderr.split("error: ")[-1].splitlines()[0]
                return lib.with_suffix(".json")

            def run(manifest, steps, flags=()):
                r = subprocess.run([str(bin_ / "remat-run"), str(manifest),
                                    f"--steps={steps}", "--json", *extra,
                                    *flags],
                                   env=env, check=True, capture_output=True,
                                   text=True)
                return json.loads(r.stdout)

            base = build("base", [])
            first = run(base, 2)["step_ms"][-1]
            steps = max(3, 1 + math.ceil(a.min_ms / max(first, 1e-3)))
            profile = tmp / f"{model}.profile.json"
            run(build("profiled", ["--profile-ops"]), steps,
                [f"--profile={profile}"])
            graph = tmp / f"{model}.graph.json"
            subprocess.run([str(bin_ / "remat-compile"), str(src),
                            "--emit=graph", "-o", str(graph)], check=True)
            block = json.loads(subprocess.run(
                [str(bin_ / "remat-solve"), str(graph), "--solver=every-layer",
                 "--budget=1.0x", "--json"], check=True, capture_output=True,
                text=True).stdout)["peak_bytes"]
            for limit in ("75%", "50%", str(block)):
                label = limit if limit.endswith("%") else "per block"
                flags = [f"--memory-limit={limit}"]
                builds = {"base": base,
                          "flops": build(f"flops-{label}", flags),
                          "roofline": build(f"roof-{label}", flags + [
                              "--cost-model=roofline", *desc]),
                          "profile": build(f"prof-{label}", flags + [
                              f"--cost-profile={profile}", *desc])}
                failed = [f"{k}: {v}" for k, v in builds.items() if isinstance(v, str)]
                if failed:
                    print(f"| {model} | {label} | {'; '.join(failed)} "
                          "| | | | | | | | |", flush=True)
                    continue
                times = {k: [] for k in builds}
                for _ in range(a.rounds):
                    for k, manifest in builds.items():
                        times[k].append(min(run(manifest, steps)["step_ms"][1:]))
                t = {k: statistics.median(v) for k, v in times.items()}
                spread = (max(times["base"]) - min(times["base"])) / t["base"]
                row = [model, label, f"{t['base']:.1f} (±{50 * spread:.0f}%)"]
                for k in MODELS:
                    m = json.load(open(builds[k]))
                    if k == "flops":
                        pred = m["predicted_cost_flops"] / m["baseline_cost_flops"] - 1
                    else:
                        pred = m["predicted_step_ms"] / m["baseline_step_ms"] - 1
                    meas = t[k] / t["base"] - 1
                    errors[k].append(abs(pred - meas))
                    row += [f"{100 * pred:+.1f}%", f"{100 * meas:+.1f}%"]
                row += [f"{t['roofline'] / t['flops']:.3f}",
                        f"{t['profile'] / t['flops']:.3f}"]
                print("| " + " | ".join(row) + " |", flush=True)
    for k, e in errors.items():
        if e:
            print(f"\n{k}: mean |predicted - measured| overhead "
                  f"{100 * statistics.mean(e):.1f} points, worst "
                  f"{100 * max(e):.1f} ({len(e)} rows)")


if __name__ == "__main__":
    main()
