#!/usr/bin/env python3
"""Checks remat-run --json outputs of one model built without and with remat.

usage: check-e2e.py BASE.json REMAT.json [--tolerance FRACTION] [--same-peak]

Fails unless, for both builds, the measured peak equals the predicted peak
(exactly by default: the runtime counts requested bytes), the remat build stays under its limit and below the base peak, the
loss falls, and the losses and final parameters (and, for steps compiled with
--return-gradients, every gradient of every step) are bitwise identical.
With --same-peak, the second is another build of the same schedule (other
kernels): both peaks must be equal instead.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("remat")
    p.add_argument("--tolerance", type=float, default=0.0)
    p.add_argument("--same-peak", action="store_true")
    a = p.parse_args()
    base = json.load(open(a.base))
    remat = json.load(open(a.remat))
    errors = []
    for name, run in (("base", base), ("remat", remat)):
        pred, meas = run["predicted_peak_bytes"], run["measured_peak_bytes"]
        if abs(meas - pred) > a.tolerance * pred:
            errors.append(f"{name}: measured peak {meas} vs predicted {pred}")
        if not run["losses"][-1] < run["losses"][0]:
            errors.append(f"{name}: loss did not fall: {run['losses']}")
    limit = remat["memory_limit_bytes"]
    if a.same_peak:
        if remat["measured_peak_bytes"] != base["measured_peak_bytes"]:
            errors.append("peaks differ")
    elif limit is None or remat["measured_peak_bytes"] > limit:
        errors.append(f"remat: measured peak {remat['measured_peak_bytes']} "
                      f"over the limit {limit}")
    if not a.same_peak and not (remat["measured_peak_bytes"] <
                                base["measured_peak_bytes"]):
        errors.append("remat: peak not below the base build's")
    # Exact equality on purpose: the same kernels on the same inputs.
    if base["losses"] != remat["losses"]:
        errors.append(f"losses differ: {base['losses']} vs {remat['losses']}")
    if base["params_fnv1a"] != remat["params_fnv1a"]:
        errors.append("final parameters differ")
    # Steps compiled with --return-gradients: every gradient of every step.
    grads = "outputs_fnv1a" in base and "outputs_fnv1a" in remat
    if grads and base["outputs_fnv1a"] != remat["outputs_fnv1a"]:
        errors.append("gradients differ")
    for e in errors:
        print("error:", e)
    if errors:
        return 1
    print(f"ok: peak {base['measured_peak_bytes']} -> "
          f"{remat['measured_peak_bytes']} bytes (limit {limit}), "
          f"predicted == measured, losses"
          + (", gradients" if grads else "") + " and parameters identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
