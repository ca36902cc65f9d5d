#!/usr/bin/env python3
"""Checks that two remat-run --json outputs of one model agree to a tolerance.

usage: check-close.py A.json B.json [--rtol R] [--same-first-loss]

For builds whose kernels sum in different orders (the GPU mapping's loops
against the CPU build's BLAS): every loss must agree to rtol, relative to the
larger magnitude, and both builds' measured peaks must equal their
predictions. With --same-first-loss the first step's losses (the forward
pass from the same parameters) must also be bitwise identical.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--same-first-loss", action="store_true")
    args = p.parse_args()
    a, b = json.load(open(args.a)), json.load(open(args.b))
    errors = []
    if len(a["losses"]) != len(b["losses"]):
        errors.append("different numbers of steps")
    worst = 0.0
    for i, (x, y) in enumerate(zip(a["losses"], b["losses"])):
        err = abs(x - y) / max(abs(x), abs(y), 1e-30)
        worst = max(worst, err)
        if err > args.rtol:
            errors.append(f"step {i + 1}: losses {x} and {y} differ by "
                          f"{err:.3g} (rtol {args.rtol})")
    if args.same_first_loss and a["losses"][0] != b["losses"][0]:
        errors.append(f"first losses differ: {a['losses'][0]} and "
                      f"{b['losses'][0]}")
    for name, run in (("first", a), ("second", b)):
        if run["measured_peak_bytes"] != run["predicted_peak_bytes"]:
            errors.append(f"{name}: measured peak {run['measured_peak_bytes']}"
                          f" vs predicted {run['predicted_peak_bytes']}")
    for e in errors:
        print("error:", e)
    if errors:
        return 1
    print(f"ok: losses agree to {worst:.3g} relative (rtol {args.rtol}), "
          "predicted == measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
