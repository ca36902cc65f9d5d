#!/usr/bin/python3
"""Exports a PyTorch module's forward pass and loss to the train dialect.

    python/remat_export.py MODEL --input-shape 8,3,32,32 [--labels 10 | --mse]
        [--dtype f32|f64] -o OUT_DIR

MODEL is a torchvision model name (resnet18, vgg16, mobilenet_v2, ...), a zoo
name of python/zoo.py, or FILE.py:NAME for a function or class in a Python
file that returns an nn.Module. The module is traced with torch.fx, shapes
are propagated on a seeded example input, and every node becomes train ops.
Writes OUT_DIR/model.mlir and, for remat-run --inputs-dir=OUT_DIR, one raw
little-endian NAME.bin per parameter (the module's initial weights), for the
input `x` and for the labels `y`.

An op the exporter does not know stops it with an error that names the op
and the source line; nothing is dropped. Batch norm is exported in training
mode (batch statistics, running averages not kept: nothing in a step reads
them). GELU must be the exact (erf) form, PyTorch's default: the tanh
approximation is refused, not silently replaced.
"""
import argparse
import math
import operator
import os
import sys

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_ops  # noqa: E402
import trainir  # noqa: E402

DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
          torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}


class ExportError(Exception):
    pass


def _where(node):
    trace = node.meta.get("stack_trace") or ""
    frames = [l.strip() for l in trace.splitlines()
              if l.strip().startswith("File ") and "/torch/" not in l
              and os.path.basename(__file__) not in l]
    if not frames:
        return ""
    # 'File "m.py", line 12, in forward' -> m.py:12
    parts = frames[-1].split('"')
    line = frames[-1].split("line ")[-1].split(",")[0]
    return f" at {parts[1]}:{line}" if len(parts) > 2 else f" ({frames[-1]})"


def _shape(node):
    meta = node.meta.get("tensor_meta")
    if meta is None:
        raise ExportError(f"no static shape for '{node.name}'{_where(node)}")
    return list(meta.shape)


class _ModuleTracer(torch.fx.Tracer):
    """torch.fx's tracer, recording in each node's meta the path of the
    innermost module whose forward created it ('blocks.0.attn'), which the
    exporter writes as the ops' locations."""

    def __init__(self):
        super().__init__()
        self.path = []

    def call_module(self, m, forward, args, kwargs):
        self.path.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.path.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        if self.path:
            node.meta["module_path"] = self.path[-1]
        return node


class Exporter:
    def __init__(self, module, example, loss, name):
        self.module = module
        self.example, self.loss = example, loss
        floats = [t for t in module.parameters()] or [example]
        self.dtype = DTYPES[floats[0].dtype]
        self.m = trainir.Model(name, self.dtype,
                               "// Exported from PyTorch by python/remat_export.py")
        self.values, self.params, self.weights = {}, {}, {}
        self.dropouts = 0
        self.seed = None

    # Parameters are arguments named as in the module's state dict.
    def param(self, qualified):
        if qualified not in self.params:
            tensor = self.module.get_parameter(qualified)
            self.params[qualified] = self.m.param(qualified, list(tensor.shape))
            self.weights[qualified] = tensor.detach()
        return self.params[qualified]

    def export(self):
        tracer = _ModuleTracer()
        tracer.record_stack_traces = True  # for errors that name the line
        try:
            graph = torch.fx.GraphModule(self.module, tracer.trace(self.module))
        except Exception as e:  # torch.fx raises several kinds
            raise ExportError(f"torch.fx cannot trace the model: {e}") from e
        ShapeProp(graph).propagate(self.example)
        x = self.m.input("x", list(self.example.shape), DTYPES[self.example.dtype])
        out = None
        for node in graph.graph.nodes:
            self.m.loc = node.meta.get("module_path")
            if node.op == "placeholder":
                self.values[node] = x
            elif node.op == "get_attr":
                if node.target not in dict(self.module.named_parameters()):
                    raise ExportError(f"'{node.target}' is a buffer or constant "
                                      f"the step would read{_where(node)}: only "
                                      "parameters are supported")
                self.values[node] = self.param(node.target)
            elif node.op == "call_module":
                self.values[node] = self.call_module(node)
            elif node.op in ("call_function", "call_method"):
                self.values[node] = self.call(node)
            elif node.op == "output":
                out = self.values[node.args[0]]
        self.m.loc = None
        if self.loss == "mse":
            y = self.m.label("y", out.shape)
            loss = self.m.mse_loss(out, y)
        else:
            if len(out.shape) != 2:
                raise ExportError(f"cross-entropy needs [batch, classes] logits, "
                                  f"the model returns {out.shape}")
            y = self.m.label("y", [out.shape[0]], "i64")
            loss = self.m.cross_entropy(out, y)
        return self.m.text(loss)

    def arg(self, a):
        if isinstance(a, torch.fx.Node):
            return self.values[a]
        raise ExportError(f"unsupported non-tensor operand {a!r}")

    def linear(self, x, w, b):
        shape = x.shape
        if len(shape) != 2:
            x = self.m.reshape(x, [math.prod(shape[:-1]), shape[-1]])
        y = self.m.matmul(x, w, transpose_rhs=True)
        if b is not None:
            y = self.m.bias_add(y, b)
        if len(shape) != 2:
            y = self.m.reshape(y, shape[:-1] + [w.shape[0]])
        return y

    def dropout(self, x, p):
        if p == 0:
            return x
        if self.seed is None:
            self.seed = self.m.input("dropout.seed", [], "i64")
        offset = self.m.input(f"dropout.offset{self.dropouts}", [], "i64")
        self.dropouts += 1
        return self.m.dropout(x, self.seed, offset, float(p))

    def call_module(self, node):
        mod = self.module.get_submodule(node.target)
        x = self.arg(node.args[0])
        p = lambda name: self.param(f"{node.target}.{name}")
        nn = torch.nn
        if isinstance(mod, nn.Linear):
            return self.linear(x, p("weight"), p("bias") if mod.bias is not None else None)
        if isinstance(mod, nn.Conv2d):
            if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                raise ExportError(f"Conv2d '{node.target}': only numeric zero padding")
            y = self.m.conv2d(x, p("weight"), stride=mod.stride, padding=mod.padding,
                              groups=mod.groups, dilation=mod.dilation)
            if mod.bias is not None:
                b = self.m.reshape(p("bias"), [mod.out_channels, 1, 1])
                y = self.m.add(y, b, "biased")
            return y
        if isinstance(mod, nn.BatchNorm2d):
            if not mod.affine:
                raise ExportError(f"BatchNorm2d '{node.target}' without affine parameters")
            return self.m.batch_norm(x, p("weight"), p("bias"), mod.eps)
        if isinstance(mod, nn.LayerNorm):
            if len(mod.normalized_shape) != 1 or not mod.elementwise_affine:
                raise ExportError(f"LayerNorm '{node.target}': only over the last "
                                  "dimension, with affine parameters")
            return self.m.layer_norm(x, p("weight"), p("bias"), mod.eps)
        if isinstance(mod, nn.ReLU):
            return self.m.relu(x)
        if isinstance(mod, nn.GELU):
            if mod.approximate != "none":
                raise ExportError(f"GELU '{node.target}' with approximate="
                                  f"'{mod.approximate}': the dialect has the exact "
                                  "(erf) form; use nn.GELU()")
            return self.m.gelu(x)
        if isinstance(mod, nn.Hardtanh):  # ReLU6 is one
            return self.m.clamp(x, mod.min_val, mod.max_val)
        if isinstance(mod, nn.Tanh):
            return self.m.tanh(x)
        if isinstance(mod, nn.Sigmoid):
            return self.m.sigmoid(x)
        if isinstance(mod, nn.Dropout):
            return self.dropout(x, mod.p)
        if isinstance(mod, nn.Identity):
            return x
        if isinstance(mod, nn.Flatten):
            return self.flatten(x, mod.start_dim, mod.end_dim)
        if isinstance(mod, (nn.MaxPool2d, nn.AvgPool2d)):
            return self.pool(node, mod, x)
        if isinstance(mod, nn.AdaptiveAvgPool2d):
            return self.adaptive_pool(node, x, mod.output_size)
        if isinstance(mod, nn.Embedding):
            return self.m.embedding(p("weight"), x)
        if isinstance(mod, nn.Upsample):
            return self.upsample(node, mod.scale_factor, mod.mode)
        raise ExportError(f"unsupported module {type(mod).__name__} "
                          f"('{node.target}'){_where(node)}")

    def adaptive_pool(self, node, x, size):
        """Global pooling, identity, or an exact average pool."""
        out = list(size) if isinstance(size, (tuple, list)) else [size, size]
        n, c, h, w = x.shape
        if out == [1, 1]:
            return self.m.reshape(self.m.mean(x, [2, 3]), [n, c, 1, 1])
        if out == [h, w]:
            return x
        if out[0] % h == 0 and out[1] % w == 0 and out[0] // h == out[1] // w:
            # Each output cell averages the one input cell it falls in.
            return self.m.upsample(x, out[0] // h)
        if h % out[0] == 0 and w % out[1] == 0 and h // out[0] == w // out[1]:
            k = h // out[0]
            return self.m.avg_pool2d(x, k, k)
        raise ExportError(f"adaptive average pooling from {h}x{w} to {out}"
                          f"{_where(node)}: only global, identity, an even "
                          "square split or an integer replication")

    def pool(self, node, mod, x):
        one = lambda v: v if isinstance(v, int) else (v[0] if len(set(v)) == 1 else None)
        k, s, pad = one(mod.kernel_size), one(mod.stride), one(mod.padding)
        if None in (k, s, pad) or mod.ceil_mode:
            raise ExportError(f"{type(mod).__name__} '{node.target}': only square "
                              "windows, strides and padding, without ceil_mode")
        if isinstance(mod, torch.nn.MaxPool2d):
            if one(mod.dilation) != 1:
                raise ExportError(f"MaxPool2d '{node.target}' with dilation")
            return self.m.max_pool2d(x, k, s, pad)
        if not mod.count_include_pad or mod.divisor_override:
            raise ExportError(f"AvgPool2d '{node.target}': only count_include_pad")
        return self.m.avg_pool2d(x, k, s, pad)

    def upsample(self, node, scale, mode):
        if mode != "nearest" or scale is None or float(scale) != int(scale):
            raise ExportError(f"upsampling{_where(node)}: only nearest with an "
                              "integer scale factor")
        return self.m.upsample(self.arg(node.args[0]), int(scale))

    def flatten(self, x, start=0, end=-1):
        shape = x.shape
        end = end % len(shape)
        new = shape[:start] + [math.prod(shape[start:end + 1])] + shape[end + 1:]
        return self.m.reshape(x, new) if new != shape else x

    def call(self, node):
        t, args = node.target, node.args
        F = torch.nn.functional
        name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
        if t in (operator.add, torch.add, operator.iadd, "add", "add_"):
            return self.binary("add", node)
        if t in (operator.sub, torch.sub, "sub"):
            return self.binary("sub", node)
        if t in (operator.mul, torch.mul, "mul"):
            return self.binary("mul", node)
        if t in (operator.truediv, torch.div, "div"):
            return self.binary("div", node)
        if t in (torch.relu, F.relu, "relu"):
            return self.m.relu(self.arg(args[0]))
        if t in (torch.clamp, "clamp", F.relu6, F.hardtanh):
            lo, hi = (0.0, 6.0) if t is F.relu6 else (-1.0, 1.0)
            rest = list(args[1:3])
            if t in (torch.clamp, "clamp"):
                lo = rest[0] if rest else node.kwargs.get("min")
                hi = rest[1] if len(rest) > 1 else node.kwargs.get("max")
            elif t is F.hardtanh and rest:
                lo, hi = rest[0], rest[1] if len(rest) > 1 else hi
            if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
                raise ExportError(f"clamp without both constant bounds{_where(node)}")
            return self.m.clamp(self.arg(args[0]), lo, hi)
        if t in (torch.tanh, "tanh"):
            return self.m.tanh(self.arg(args[0]))
        if t in (torch.sigmoid, "sigmoid"):
            return self.m.sigmoid(self.arg(args[0]))
        if t is F.gelu:
            if node.kwargs.get("approximate", "none") != "none":
                raise ExportError(f"gelu with approximate='tanh'{_where(node)}: "
                                  "the dialect has the exact (erf) form")
            return self.m.gelu(self.arg(args[0]))
        if t in (torch.flatten, "flatten"):
            start = args[1] if len(args) > 1 else node.kwargs.get("start_dim", 0)
            end = args[2] if len(args) > 2 else node.kwargs.get("end_dim", -1)
            return self.flatten(self.arg(args[0]), start, end)
        if t in ("view", "reshape", torch.reshape):
            return self.m.reshape(self.arg(args[0]), _shape(node))
        if t in ("contiguous",):
            return self.arg(args[0])
        if t in ("transpose", torch.transpose, "permute", torch.permute):
            x = self.arg(args[0])
            rank = len(x.shape)
            if t in ("transpose", torch.transpose):
                a, b = args[1] % rank, args[2] % rank
                perm = list(range(rank))
                perm[a], perm[b] = perm[b], perm[a]
            else:
                dims = args[1] if isinstance(args[1], (tuple, list)) else args[1:]
                perm = [d % rank for d in dims]
            return self.m.transpose(x, perm)
        if t in (torch.softmax, F.softmax, "softmax", F.log_softmax, "log_softmax"):
            x = self.arg(args[0])
            dim = args[1] if len(args) > 1 else node.kwargs.get("dim")
            if dim is None or dim % len(x.shape) != len(x.shape) - 1:
                raise ExportError(f"{name} over dim {dim}{_where(node)}: only the "
                                  "last dimension")
            log = t in (F.log_softmax, "log_softmax")
            return self.m.log_softmax(x) if log else self.m.softmax(x)
        if t is remat_ops.causal_mask:
            return self.m.causal_mask(self.arg(args[0]))
        if t is F.adaptive_avg_pool2d:
            return self.adaptive_pool(node, self.arg(args[0]), args[1])
        if t in (torch.matmul, operator.matmul, torch.bmm):
            return self.matmul(node)
        if t is torch.cat:
            values = [self.arg(v) for v in args[0]]
            dim = args[1] if len(args) > 1 else node.kwargs.get("dim", 0)
            return self.m.concat(values, dim % len(values[0].shape))
        if t is F.dropout:
            p = args[1] if len(args) > 1 else node.kwargs.get("p", 0.5)
            return self.dropout(self.arg(args[0]), p)
        if t is F.interpolate:
            return self.upsample(node, node.kwargs.get("scale_factor"),
                                 node.kwargs.get("mode", "nearest"))
        raise ExportError(f"unsupported op '{name}'{_where(node)}")

    def binary(self, op, node):
        a, b = node.args[0], node.args[1]
        if isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node):
            return self.m.binary(op, self.values[a], self.values[b])
        # A tensor and a Python number: a scale (mul/div) or an error.
        tensor, number = (a, b) if isinstance(a, torch.fx.Node) else (b, a)
        if op == "mul" and isinstance(number, (int, float)):
            return self.m.scale(self.values[tensor], float(number))
        if op == "div" and tensor is a and isinstance(number, (int, float)):
            return self.m.scale(self.values[tensor], 1.0 / float(number))
        raise ExportError(f"'{op}' of a tensor and {number!r}{_where(node)}: "
                          "only scaling by a constant")

    def matmul(self, node):
        a, b = self.arg(node.args[0]), self.arg(node.args[1])
        if len(a.shape) == 2 and len(b.shape) == 2:
            return self.m.matmul(a, b)
        if len(a.shape) != len(b.shape) or len(a.shape) < 3 or \
                a.shape[:-2] != b.shape[:-2]:
            raise ExportError(f"matmul of {a.shape} and {b.shape}{_where(node)}: "
                              "only equal batch dimensions")
        batch = a.shape[:-2]
        flat = lambda v: self.m.reshape(v, [math.prod(batch)] + v.shape[-2:]) \
            if len(batch) != 1 else v
        r = self.m.batch_matmul(flat(a), flat(b))
        return self.m.reshape(r, batch + r.shape[-2:]) if len(batch) != 1 else r


def write_bin(tensor, path):
    tensor.detach().cpu().contiguous().numpy().tofile(path)


def export_to(module, example, labels, loss, out_dir, name="model"):
    """Writes out_dir/model.mlir and the .bin files; returns the MLIR text."""
    os.makedirs(out_dir, exist_ok=True)
    exporter = Exporter(module, example, loss, name)
    text = exporter.export()
    with open(os.path.join(out_dir, "model.mlir"), "w") as f:
        f.write(text)
    for qualified, w in exporter.weights.items():
        write_bin(w, os.path.join(out_dir, qualified + ".bin"))
    write_bin(example, os.path.join(out_dir, "x.bin"))
    write_bin(labels, os.path.join(out_dir, "y.bin"))
    return text


def load_model(spec):
    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        path, attr = spec.split(":", 1)
        scope = {"__name__": "remat_user_model"}
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), scope)
        return scope[attr]()
    import zoo
    if hasattr(zoo, spec):
        return getattr(zoo, spec)()
    import torchvision.models
    if hasattr(torchvision.models, spec):
        return getattr(torchvision.models, spec)()
    raise ExportError(f"unknown model '{spec}': not a torchvision model, a zoo "
                      "model (python/zoo.py) or FILE.py:NAME")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--input-shape", required=True,
                   help="comma-separated, batch first, e.g. 8,3,32,32")
    p.add_argument("--input-dtype", default=None, choices=["i64"],
                   help="integer inputs (token ids) in [0, --vocab)")
    p.add_argument("--vocab", type=int, default=0)
    p.add_argument("--labels", type=int, default=0,
                   help="cross-entropy over this many classes (default: the "
                   "model's output width)")
    p.add_argument("--mse", action="store_true", help="MSE loss instead")
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True, help="output directory")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    dtype = torch.float64 if a.dtype == "f64" else torch.float32
    try:
        module = load_model(a.model).to(dtype).train()
        shape = [int(d) for d in a.input_shape.split(",")]
        if a.input_dtype == "i64":
            example = torch.randint(0, a.vocab, shape)
        else:
            example = torch.randn(shape, dtype=dtype)
        with torch.no_grad():
            out = module(example)
        if a.mse:
            labels = torch.randn(out.shape, dtype=dtype)
        else:
            classes = a.labels or out.shape[-1]
            labels = torch.randint(0, classes, out.shape[:1])
        export_to(module, example, labels, "mse" if a.mse else "cross_entropy",
                  a.output)
    except ExportError as e:
        print(f"remat-export: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {a.output}/model.mlir and its weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
