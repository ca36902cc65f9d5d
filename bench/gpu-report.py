#!/usr/bin/env python3
"""Markdown tables from utils/gpu-check.sh's result file.

usage: bench/gpu-report.py RESULT.json [-o OUT.md]

Per example model and limit: predicted and measured peak device bytes (the
runtime's own count, and the driver pool's high-water mark as a
cross-check), whether measured is within 5% of predicted and at most the
limit, the median step time (wall clock and CUDA events) and its ratio to
the build without a limit beside the cost model's predicted compute ratio.
Then the step time of the default kernels against matmuls and reductions as
one thread per output, the gradient checks (the first step against the
CPU build, float64 against the CPU's float64, the build at 50% against the
build without a limit bit for bit, central differences) and the
out-of-memory check.
"""
import argparse
import json
import re
import sys


def mib(b):
    return f"{b / 2**20:.2f}" if isinstance(b, (int, float)) and b >= 0 else "-"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("result")
    p.add_argument("-o", "--output")
    a = p.parse_args()
    data = json.load(open(a.result))
    lines = [f"GPU: {data.get('gpu') or 'unknown'}; run {data['date']} "
             f"(`utils/gpu-check.sh run`).", ""]
    lines += ["| run | limit MiB | predicted MiB | measured MiB | pool high MiB"
              " | within 5%, under limit | step ms | device ms | time vs none"
              " | predicted compute |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    base = {}
    for run in data["runs"]:
        if run["kind"] != "bench":
            continue
        r, name = run["result"], run["name"]
        model = name.rsplit("-", 1)[0]
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:120]} |||||||||")
            continue
        if name.endswith("-none"):
            base[model] = r["median_step_ms"]
        pred, meas = r["predicted_peak_bytes"], r["measured_peak_bytes"]
        limit = r.get("memory_limit_bytes")
        ok = abs(meas - pred) <= 0.05 * pred and (limit is None or meas <= limit)
        ratio = (f"{r['median_step_ms'] / base[model]:.2f}x"
                 if model in base else "-")
        lines.append(
            f"| {name} | {mib(limit) if limit else 'none'} | {mib(pred)} | "
            f"{mib(meas)} | {mib(r.get('pool_peak_bytes', -1))} | "
            f"{'yes' if ok else 'NO'} | {r['median_step_ms']:.2f} | "
            f"{r.get('median_device_ms', -1):.2f} | {ratio} | "
            f"{r['predicted_overhead']:.3f}x |")
    if data.get("refused"):
        lines += ["", "Refused (the solver's smallest reachable peak is above "
                  "the limit):", ""]
        # Entries were joined with ';', which the messages also hold.
        lines += [f"- {r.strip()}" for r in
                  re.split(r";(?=[\w-]+-\d+: )", data["refused"].rstrip(";"))
                  if r.strip()]
    none = {run["name"].rsplit("-", 1)[0]: run["result"] for run in data["runs"]
            if run["kind"] == "bench" and run["name"].endswith("-none")}
    variants = [("naive-kernels", "matmuls as one thread per output"),
                ("rowthread-kernels", "reductions as one thread per output"),
                ("tile8-kernels", "8 x 8 matmul register tiles")]
    for kind, what in variants:
        runs = [run for run in data["runs"] if run["kind"] == kind]
        if not runs:
            continue
        lines += ["", f"| model, no limit | default kernels: device ms | {what}:"
                  " device ms | default's speedup |", "|---|---|---|---|"]
        for run in runs:
            model, r = run["name"].rsplit("-", 1)[0], run["result"]
            base = none.get(model, {})
            if "error" in r or "median_device_ms" not in base:
                lines.append(f"| {model} | error: "
                             f"{(r.get('error') or base.get('error', ''))[:120]} |||")
                continue
            t, n = base["median_device_ms"], r["median_device_ms"]
            speedup = f"{n / t:.2f}x" if t > 0 else "-"
            lines.append(f"| {model} | {t:.2f} | {n:.2f} | {speedup} |")
    results = {run["name"]: run.get("result", {}) for run in data["runs"]}
    lines += ["", "| check | result |", "|---|---|"]
    for run in data["runs"]:
        r, kind, name = run.get("result", {}), run["kind"], run["name"]
        peak = ("" if "measured_peak_bytes" not in r else
                f", measured peak {'==' if r['measured_peak_bytes'] == r['predicted_peak_bytes'] else '!='}"
                " predicted")
        if "error" in r and kind not in ("out-of-memory",):
            text = f"error: {r['error'][:160]}"
        elif kind == "gradients-vs-cpu":
            ok = r["compare_worst_error"] <= r["compare_rtol"]
            text = (f"first step's gradients vs the CPU build: worst error "
                    f"{r['compare_worst_error']:.3g} (allowed {r['compare_rtol']}"
                    f"{'' if ok else ', OVER'}){peak}")
        elif kind == "f64-gradients-vs-cpu":
            text = (f"float64, 3 steps, gradients vs the CPU build: worst error "
                    f"{r['compare_worst_error']:.3g} (allowed {r['compare_rtol']})"
                    f"{peak}")
        elif kind == "remat-identical":
            if not name.endswith("-half-3steps"):
                continue
            base = results.get(name.replace("-half-", "-base-"), {})
            same = (base.get("outputs_fnv1a") == r.get("outputs_fnv1a") and
                    base.get("params_fnv1a") == r.get("params_fnv1a") and
                    base.get("losses") == r.get("losses"))
            text = (f"3 steps at 50% vs without a limit: losses, gradients and "
                    f"parameters {'bitwise identical' if same else 'DIFFER'}{peak}")
        elif kind == "grad-check":
            text = (f"{r['grad_check_failures']} of {r['grad_check_samples']} "
                    "central differences off")
        elif kind == "out-of-memory":
            text = f"exit {run['rc']}: {run['message']}"
        elif kind == "skipped":
            text = "skipped (past the deadline)"
        else:
            continue
        lines.append(f"| {name} | {text} |")
    out = "\n".join(lines) + "\n"
    if a.output:
        open(a.output, "w").write(out)
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
