#!/usr/bin/env python3
"""Finite-difference gradient check of every differentiable train op.

usage: op-grad-check.py --compile REMAT_COMPILE --run REMAT_RUN --out DIR
                        [--samples K] [--compile-flag F]... [CASE...]

Each case is a tiny float64 model around one op whose float operands are all
parameters, so that remat-run --grad-check compares the gradient of every
operand with central differences. Also runs one step and checks that the measured peak equals the predicted
one. Prints one line per case; exits non-zero
if any case fails.
"""
import argparse
import json
import os
import subprocess
import sys


def t(shape, dtype="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


# name -> (params, inputs, body lines, result name, result shape or None for
# a scalar loss). Params and inputs are (name, shape[, dtype]).
CASES = {}


def case(name, params, body, result, shape, inputs=(), check=()):
    CASES[name] = (params, list(inputs), body, result, shape, list(check))


def binary(op, rhs_shape, rhs_body=None):
    body = []
    rhs = "%b"
    if rhs_body:
        body.append(rhs_body)
        rhs = "%bb"
    body.append(f"%r = train.{op} %a, {rhs} : {t([3, 4, 5])}, "
                f"{t(rhs_shape)} -> {t([3, 4, 5])}")
    case(f"{op}_broadcast", [("a", [3, 4, 5]), ("b", rhs_shape)], body, "%r",
         [3, 4, 5])


binary("add", [4, 1])
binary("sub", [5])
binary("mul", [3, 1, 5])
binary("div", [4, 1], f"%bb = train.sigmoid %b : {t([4, 1])}")
binary("maximum", [4, 1])
binary("minimum", [5])
case("where", [("a", [3, 4, 5]), ("b", [4, 1])],
     ["%z = arith.constant dense<0.0> : tensor<f64>",
      f"%c = train.compare %a, %z {{predicate = #train<cmp lt>}} : {t([3, 4, 5])}, "
      f"tensor<f64> -> {t([3, 4, 5])}",
      f"%r = train.where %c, %b, %a : {t([3, 4, 5])}, {t([4, 1])}, {t([3, 4, 5])} "
      f"-> {t([3, 4, 5])}"],
     "%r", [3, 4, 5])
for op in ("sum", "mean", "amax", "amin"):
    case(op, [("x", [3, 4, 5])],
         [f"%r = train.{op} %x {{dims = array<i64: 0, 2>}} : {t([3, 4, 5])} -> {t([4])}"],
         "%r", [4])
case("clamp", [("x", [4, 6])],
     [f"%r = train.clamp %x {{min = -0.5 : f64, max = 0.5 : f64}} : {t([4, 6])}"],
     "%r", [4, 6])
for kind, alpha in [("exp", None), ("abs", None), ("sin", None), ("cos", None),
                    ("erf", None), ("silu", None), ("hardswish", None),
                    ("hardsigmoid", None), ("mish", None), ("softplus", None),
                    ("leaky_relu", 0.1), ("elu", 1.0), ("pow", 3.0)]:
    extra = f", alpha = {alpha} : f64" if alpha is not None else ""
    case(f"unary_{kind}", [("x", [4, 6])],
         [f"%r = train.unary %x {{kind = #train<unary {kind}>{extra}}} : {t([4, 6])}"],
         "%r", [4, 6])
# Functions of positive numbers, on exp(x).
for kind in ("log", "sqrt", "rsqrt"):
    case(f"unary_{kind}", [("x", [4, 6])],
         [f"%e = train.unary %x {{kind = #train<unary exp>}} : {t([4, 6])}",
          f"%r = train.unary %e {{kind = #train<unary {kind}>}} : {t([4, 6])}"],
         "%r", [4, 6])
for op in ("tanh", "sigmoid", "gelu", "relu"):
    case(op, [("x", [4, 6])], [f"%r = train.{op} %x : {t([4, 6])}"], "%r",
         [4, 6])
# Casts there and back: the loss is quadratic in the rounded value, so the
# central difference is exact up to the rounding of x +- eps, which sets eps
# and the tolerance for each type.
for dtype, eps, rtol in (("f32", "1e-3", "1e-3"), ("f16", "0.0625", "1e-2"),
                         ("bf16", "0.25", "2e-2")):
    case(f"cast_{dtype}", [("x", [4, 6])],
         [f"%h = train.cast %x : {t([4, 6])} -> {t([4, 6], dtype)}",
          f"%r = train.cast %h : {t([4, 6], dtype)} -> {t([4, 6])}"],
         "%r", [4, 6], check=[f"--grad-eps={eps}", f"--grad-rtol={rtol}"])
case("reshape", [("x", [2, 3, 4])],
     [f"%r = train.reshape %x : {t([2, 3, 4])} -> {t([6, 4])}"], "%r", [6, 4])
case("transpose", [("x", [2, 3, 4])],
     [f"%r = train.transpose %x {{permutation = array<i64: 2, 0, 1>}} : "
      f"{t([2, 3, 4])} -> {t([4, 2, 3])}"], "%r", [4, 2, 3])
case("batch_matmul", [("a", [2, 3, 4]), ("b", [2, 5, 4])],
     [f"%r = train.batch_matmul %a, %b {{transpose_rhs}} : {t([2, 3, 4])}, "
      f"{t([2, 5, 4])} -> {t([2, 3, 5])}"], "%r", [2, 3, 5])
case("batch_matmul_tl", [("a", [2, 4, 3]), ("b", [2, 4, 5])],
     [f"%r = train.batch_matmul %a, %b {{transpose_lhs}} : {t([2, 4, 3])}, "
      f"{t([2, 4, 5])} -> {t([2, 3, 5])}"], "%r", [2, 3, 5])
for op in ("softmax", "log_softmax"):
    case(op, [("x", [3, 7])], [f"%r = train.{op} %x : {t([3, 7])}"], "%r",
         [3, 7])
case("causal_mask", [("x", [2, 4, 4])],
     [f"%m = train.causal_mask %x : {t([2, 4, 4])}",
      f"%r = train.softmax %m : {t([2, 4, 4])}"], "%r", [2, 4, 4])
case("layer_norm", [("x", [3, 8]), ("w", [8]), ("b", [8])],
     [f"%r = train.layer_norm %x, %w, %b : {t([3, 8])}, {t([8])}"], "%r",
     [3, 8])
case("batch_norm", [("x", [4, 3, 2, 2]), ("w", [3]), ("b", [3])],
     [f"%r = train.batch_norm %x, %w, %b : {t([4, 3, 2, 2])}, {t([3])}"], "%r",
     [4, 3, 2, 2])
case("cross_entropy", [("x", [6, 5])],
     [f"%r = train.cross_entropy %x, %y : {t([6, 5])}, {t([6], 'i64')} -> {t([])}"],
     "%r", None, inputs=[("y", [6], "i64")])
case("embedding", [("e", [7, 4])],
     [f"%r = train.embedding %e, %i : {t([7, 4])}, {t([3, 5], 'i64')} -> {t([3, 5, 4])}"],
     "%r", [3, 5, 4], inputs=[("i", [3, 5], "i64")])
case("dropout", [("x", [4, 8])],
     [f"%r = train.dropout %x, %s, %o {{probability = 0.3 : f64}} : {t([4, 8])}"],
     "%r", [4, 8], inputs=[("s", [], "i64"), ("o", [], "i64")])
case("conv2d", [("x", [2, 4, 5, 5]), ("w", [6, 2, 3, 3])],
     [f"%r = train.conv2d %x, %w {{strides = array<i64: 2, 2>, padding = "
      f"array<i64: 1, 1>, groups = 2}} : {t([2, 4, 5, 5])}, {t([6, 2, 3, 3])} "
      f"-> {t([2, 6, 3, 3])}"], "%r", [2, 6, 3, 3])
case("conv2d_dilated", [("x", [1, 2, 7, 6]), ("w", [3, 2, 2, 3])],
     [f"%r = train.conv2d %x, %w {{padding = array<i64: 0, 1>, dilation = "
      f"array<i64: 2, 1>}} : {t([1, 2, 7, 6])}, {t([3, 2, 2, 3])} "
      f"-> {t([1, 3, 5, 6])}"], "%r", [1, 3, 5, 6])
case("conv2d_depthwise", [("x", [2, 3, 4, 4]), ("w", [3, 1, 3, 3])],
     [f"%r = train.conv2d %x, %w {{padding = array<i64: 1, 1>, groups = 3}} "
      f": {t([2, 3, 4, 4])}, {t([3, 1, 3, 3])} -> {t([2, 3, 4, 4])}"], "%r",
     [2, 3, 4, 4])
for op in ("max_pool2d", "avg_pool2d"):
    case(op, [("x", [2, 3, 6, 6])],
         [f"%r = train.{op} %x {{kernel = array<i64: 3, 3>, strides = "
          f"array<i64: 2, 2>, padding = array<i64: 1, 1>}} : {t([2, 3, 6, 6])} "
          f"-> {t([2, 3, 3, 3])}"], "%r", [2, 3, 3, 3])
case("upsample_nearest2d", [("x", [2, 3, 3, 2])],
     [f"%r = train.upsample_nearest2d %x {{scale = 2}} : {t([2, 3, 3, 2])} "
      f"-> {t([2, 3, 6, 4])}"], "%r", [2, 3, 6, 4])
case("concat", [("a", [2, 3, 4]), ("b", [2, 2, 4])],
     [f"%r = train.concat %a, %b {{axis = 1}} : {t([2, 3, 4])}, {t([2, 2, 4])} "
      f"-> {t([2, 5, 4])}"], "%r", [2, 5, 4])
case("slice", [("x", [4, 6])],
     [f"%r = train.slice %x {{offsets = array<i64: 1, 2>}} : {t([4, 6])} -> "
      f"{t([2, 3])}"], "%r", [2, 3])
case("matmul", [("a", [3, 4]), ("b", [4, 5])],
     [f"%r = train.matmul %a, %b : {t([3, 4])}, {t([4, 5])} -> {t([3, 5])}"],
     "%r", [3, 5])


def model(name):
    params, inputs, body, result, shape, _ = CASES[name]
    args = [f"%{p[0]}: {t(p[1])} {{train.role = #train<role param>, train.name = \"{p[0]}\"}}"
            for p in params]
    args += [f"%{i[0]}: {t(i[1], i[2])} {{train.role = #train<role input>, train.name = \"{i[0]}\"}}"
             for i in inputs]
    lines = list(body)
    if shape is not None:
        args.append(f"%label: {t(shape)} {{train.role = #train<role label>}}")
        lines.append(f"%loss = train.mse_loss {result}, %label : {t(shape)} -> {t([])}")
        result = "%loss"
    text = f"func.func @op_{name}(" + ",\n    ".join(args) + f") -> {t([])} {{\n"
    text += "".join(f"  {l}\n" for l in lines)
    text += f"  return {result} : {t([])}\n}}\n"
    return text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--compile", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--samples", type=int, default=40)
    p.add_argument("--compile-flag", action="append", default=[],
                   help="extra remat-compile flag (repeatable)")
    p.add_argument("cases", nargs="*")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    failed = 0
    for name in a.cases or CASES:
        src = os.path.join(a.out, name + ".mlir")
        with open(src, "w") as f:
            f.write(model(name))
        lib = os.path.join(a.out, name + ".so")
        c = subprocess.run([a.compile, src, "-o", lib, "--return-gradients"]
                           + a.compile_flag,
                           capture_output=True, text=True)
        if c.returncode:
            print(f"{name}: compile failed: {c.stderr.strip()}")
            failed += 1
            continue
        r = subprocess.run([a.run, lib[:-3] + ".json",
                            f"--grad-check={a.samples}"] + CASES[name][5],
                           capture_output=True, text=True)
        out = (r.stdout.strip() or r.stderr.strip()).splitlines()
        line = out[-1] if out else "no output"
        failed += r.returncode != 0
        # The memory model must hold for every op: measured == predicted.
        s = subprocess.run([a.run, lib[:-3] + ".json", "--steps=1", "--json"],
                           capture_output=True, text=True)
        if s.returncode:
            line += "; run failed: " + s.stderr.strip()
            failed += 1
        else:
            run = json.loads(s.stdout)
            pred, meas = run["predicted_peak_bytes"], run["measured_peak_bytes"]
            line += f"; peak {meas} bytes" + (
                "" if pred == meas else f" MISMATCH (predicted {pred})")
            failed += pred != meas
        print(f"{name}: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
