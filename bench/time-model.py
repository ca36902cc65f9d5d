#!/usr/bin/python3
"""How well the cost models predict time: for each example model and each
PyTorch zoo model (bench/arena.py's shapes, float32), at 75% and 50% of the
no-remat peak, builds the step priced by FLOPs and priced by the roofline
(built-in or --target-desc), runs them and the no-limit build in
interleaved rounds (OPENBLAS_NUM_THREADS=1), and prints each build's
predicted and measured step-time overhead over the no-limit build (median
of the rounds; the spread of the no-limit build's rounds is the noise).

usage: bench/time-model.py [--models mlp,...] [--rounds 5]
       [--target-desc FILE] [--build build]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
arena = __import__("arena")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(arena.EXAMPLES + list(arena.ZOO)))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--target-desc", default=None)
    p.add_argument("--build", default=str(ROOT / "build"))
    a = p.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", REMAT_NUM_THREADS="1")
    roof = ["--cost-model=roofline"] + (
        [f"--target-desc={a.target_desc}"] if a.target_desc else [])
    print("| model | limit | no-limit ms (spread) | FLOPs: predicted | measured "
          "| roofline: predicted | measured | roofline ms / FLOPs ms |")
    print("|---|---|---|---|---|---|---|---|")
    errors = {"flops": [], "roofline": []}
    with tempfile.TemporaryDirectory(prefix="remat-time.") as tmp:
        tmp = pathlib.Path(tmp)
        for model in a.models.split(","):
            src, inputs = arena.model_source(model, tmp)

            def build(tag, flags):
                lib = tmp / f"{model}-{tag}.so"
                c = subprocess.run([f"{a.build}/bin/remat-compile", str(src),
                                    "-o", str(lib), *flags],
                                   capture_output=True, text=True)
                if c.returncode:
                    return c.stderr.split("error: ")[-1].splitlines()[0]
                return lib.with_suffix(".json")

            def run(manifest):
                cmd = [f"{a.build}/bin/remat-run", str(manifest), "--steps=3",
                       "--json"]
                if inputs:
                    cmd.append(f"--inputs-dir={inputs}")
                r = subprocess.run(cmd, env=env, check=True,
                                   capture_output=True, text=True)
                return min(json.loads(r.stdout)["step_ms"][1:])

            base = build("base", [])
            for limit in ("75%", "50%"):
                builds = {"base": base,
                          "flops": build(f"flops-{limit}", [f"--memory-limit={limit}"]),
                          "roofline": build(f"roof-{limit}",
                                            [f"--memory-limit={limit}", *roof])}
                failed = [f"{k}: {v}" for k, v in builds.items() if isinstance(v, str)]
                if failed:
                    print(f"| {model} | {limit} | {'; '.join(failed)} | | | | | |",
                          flush=True)
                    continue
                times = {k: [] for k in builds}
                for _ in range(a.rounds):
                    for k, manifest in builds.items():
                        times[k].append(run(manifest))
                t = {k: statistics.median(v) for k, v in times.items()}
                spread = (max(times["base"]) - min(times["base"])) / t["base"]
                row = [model, limit, f"{t['base']:.1f} (±{50 * spread:.0f}%)"]
                for k in ("flops", "roofline"):
                    m = json.load(open(builds[k]))
                    if k == "flops":
                        pred = m["predicted_cost_flops"] / m["baseline_cost_flops"] - 1
                    else:
                        pred = m["predicted_step_ms"] / m["baseline_step_ms"] - 1
                    meas = t[k] / t["base"] - 1
                    errors[k].append(abs(pred - meas))
                    row += [f"{100 * pred:+.1f}%", f"{100 * meas:+.1f}%"]
                row.append(f"{t['roofline'] / t['flops']:.3f}")
                print("| " + " | ".join(row) + " |", flush=True)
    for k, e in errors.items():
        if e:
            print(f"\n{k}: mean |predicted - measured| overhead "
                  f"{100 * statistics.mean(e):.1f} points, worst "
                  f"{100 * max(e):.1f} ({len(e)} rows)")


if __name__ == "__main__":
    main()
