#!/usr/bin/env python3
"""Prints remat-run --json outputs side by side (used by utils/demo.sh)."""
import json
import sys


def main():
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    base = runs[0]
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    rows = [("", *(("no limit" if r["memory_limit_bytes"] is None
                    else f"limit {mib(r['memory_limit_bytes'])}") for r in runs)),
            ("solver", *(r["solver"] for r in runs)),
            ("predicted peak", *(mib(r["predicted_peak_bytes"]) for r in runs)),
            ("measured peak", *(mib(r["measured_peak_bytes"]) for r in runs)),
            ("  of which fixed", *(mib(r["fixed_bytes"]) for r in runs)),
            ("predicted compute", *(f"{r['predicted_overhead']:.3f}x" for r in runs)),
            ("median step", *(f"{r['median_step_ms']:.0f} ms" for r in runs)),
            ("step time vs no limit",
             *(f"{r['median_step_ms'] / base['median_step_ms']:.2f}x" for r in runs)),
            ("losses", *(" ".join(f"{l:.6g}" for l in r["losses"]) for r in runs)),
            ("parameters fnv1a", *(r["params_fnv1a"] for r in runs))]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    same = all(r["losses"] == base["losses"] and
               r["params_fnv1a"] == base["params_fnv1a"] for r in runs)
    exact = all(r["measured_peak_bytes"] == r["predicted_peak_bytes"] for r in runs)
    print(f"losses and parameters bitwise identical: {'yes' if same else 'NO'}; "
          f"measured peak == predicted: {'yes' if exact else 'NO'}")
    return 0 if same and exact else 1


if __name__ == "__main__":
    sys.exit(main())
