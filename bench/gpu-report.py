#!/usr/bin/env python3
"""Markdown tables from utils/gpu-check.sh's result file.

usage: bench/gpu-report.py RESULT.json [-o OUT.md]

Per example model and limit: predicted and measured peak device bytes (the
runtime's own count, and the driver pool's high-water mark as a
cross-check), whether measured is within 5% of predicted and at most the
limit, the median step time (wall clock and CUDA events) and its ratio to
the build without a limit beside the cost model's predicted compute ratio.
Then the step time of the shared-memory tiled matmul kernels against one
thread per output element, the gradient checks against the CPU build and
the out-of-memory check.
"""
import argparse
import json
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
                  "the limit): " + data["refused"]]
    none = {run["name"].rsplit("-", 1)[0]: run["result"] for run in data["runs"]
            if run["kind"] == "bench" and run["name"].endswith("-none")}
    naive = [run for run in data["runs"] if run["kind"] == "naive-kernels"]
    if naive:
        lines += ["", "| model, no limit | tiled matmuls: device ms | one thread"
                  " per output: device ms | speedup |", "|---|---|---|---|"]
    for run in naive:
        model, r = run["name"].rsplit("-", 1)[0], run["result"]
        tiled = none.get(model, {})
        if "error" in r or "median_device_ms" not in tiled:
            lines.append(f"| {model} | error: "
                         f"{(r.get('error') or tiled.get('error', ''))[:120]} |||")
            continue
        t, n = tiled["median_device_ms"], r["median_device_ms"]
        speedup = f"{n / t:.2f}x" if t > 0 else "-"
        lines.append(f"| {model} | {t:.2f} | {n:.2f} | {speedup} |")
    lines += ["", "| gradient check | result |", "|---|---|"]
    for run in data["runs"]:
        r = run.get("result", {})
        if run["kind"] == "gradients-vs-cpu":
            text = (r["error"][:160] if "error" in r else
                    f"worst error vs the CPU build {r['compare_worst_error']:.3g}"
                    f" (allowed {r['compare_rtol']}), measured peak "
                    f"{'==' if r['measured_peak_bytes'] == r['predicted_peak_bytes'] else '!='}"
                    " predicted")
        elif run["kind"] == "grad-check":
            text = (r["error"][:160] if "error" in r else
                    f"{r['grad_check_failures']} of {r['grad_check_samples']} "
                    "central differences off")
        elif run["kind"] == "out-of-memory":
            text = f"exit {run['rc']}: {run['message']}"
        else:
            continue
        lines.append(f"| {run['name']} | {text} |")
    out = "\n".join(lines) + "\n"
    if a.output:
        open(a.output, "w").write(out)
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
