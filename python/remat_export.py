#!/usr/bin/python3
"""Exports a PyTorch module's forward pass and loss to the train dialect.

    python/remat_export.py MODEL --input-shape 8,3,32,32 [--labels 10 | --mse]
        [--dtype f32|f64] -o OUT_DIR

MODEL is a torchvision model name (resnet18, vgg16, mobilenet_v2, ...), a zoo
name of python/zoo.py, or FILE.py:NAME for a function or class in a Python
file that returns an nn.Module. The module is captured at the ATen level by
PyTorch's own tracer (python/remat_capture.py: `make_fx` on a seeded example
input), and every ATen op becomes train ops located at the module path that
made it. Parameters become `param` arguments named as in the state dict;
buffers and everything computed from them alone become constants. Autodiff
stays Remat's: only the forward graph is exported. Writes OUT_DIR/model.mlir
and, for remat-run --inputs-dir=OUT_DIR, one raw little-endian NAME.bin per
parameter (the module's initial weights), for the input `x` and the labels
`y`.

An ATen op the exporter does not know, a tensor read as a Python value
(data-dependent control flow), a gradient stop (`detach`) or an in-place
update of a parameter or input stops it with an error that names the op,
the module path and the source line; nothing is dropped, except updates of
buffers that nothing in the step reads (batch norm's running statistics:
the step uses batch statistics in training mode). Dropout (and stochastic
depth) masks come from `train.dropout`'s counter-based RNG, one seed and
offset per mask, so a recomputation draws the same mask; they are not
PyTorch's random numbers.
"""
import argparse
import math
import operator
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_capture  # noqa: E402
import trainir  # noqa: E402

DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
          torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}

# Ops that only reinterpret the shape (row-major order unchanged).
_RESHAPES = {"view", "_unsafe_view", "_reshape_alias", "reshape", "view_copy",
             "squeeze", "unsqueeze", "flatten", "unflatten", "_reshape_copy"}
_IDENTITIES = {"clone", "contiguous", "alias", "lift_fresh_copy", "lift_fresh"}
# Comparisons (train.compare predicates) and bitwise logic on masks.
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
_BITWISE = {f"bitwise_{op}": f"logical_{op}" for op in ("not", "and", "or", "xor")}
_INT_DTYPES = {"i64": torch.int64, "i32": torch.int32}
# Elementwise functions of one tensor with a train.unary kind.
_UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt",
          "abs": "abs", "silu": "silu", "hardswish": "hardswish",
          "hardsigmoid": "hardsigmoid", "mish": "mish", "sin": "sin",
          "cos": "cos", "erf": "erf"}


class ExportError(Exception):
    pass


def _outputs_error(count):
    return ExportError(f"the model returns {count} tensors: export needs one "
                       "(the logits or the prediction the loss compares)")


class _Mask:
    """A dropout mask, bernoulli(keep) * scale, kept until a multiply folds
    it into train.dropout of the other operand or something needs it."""

    def __init__(self, shape, keep, scale):
        self.shape, self.keep, self.scale = shape, keep, scale


class _Transposed:
    """aten.t / transpose of the last two dims, kept until a consumer either
    folds it into a matmul (transpose_rhs) or needs it materialized."""

    def __init__(self, value, perm):
        self.value, self.perm = value, perm


_name = remat_capture.op_name


def _shape(node):
    meta = node.meta.get("tensor_meta")
    if meta is None or not hasattr(meta, "shape"):
        raise ExportError(f"no static shape for '{node.name}'")
    return list(meta.shape)


def _dtype(node):
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return getattr(meta, "dtype", None)


def _dims(dims):
    """A reduction's dims argument: one int, a list, or None for all."""
    return [dims] if isinstance(dims, int) else dims


def _pair(v):
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    return v * 2 if len(v) == 1 else v


class Exporter:
    def __init__(self, module, example, loss, name):
        self.module = module
        self.example, self.loss = example, loss
        floats = [t for t in module.parameters()] or [example]
        self.torch_dtype = floats[0].dtype
        self.dtype = DTYPES[self.torch_dtype]
        self.m = trainir.Model(name, self.dtype,
                               "// Exported from PyTorch by python/remat_export.py")
        self.values, self.params, self.weights = {}, {}, {}
        self.consts = {}
        self.dropouts = 0
        self.detached = set()
        self.seed = None
        self.node = None

    # Diagnostics -------------------------------------------------------------
    def where(self, node=None):
        node = node or self.node
        parts = []
        if node is not None and node.meta.get("module_path"):
            parts.append(f"in '{node.meta['module_path']}'")
        if node is not None and node.meta.get("source"):
            parts.append(f"at {node.meta['source']}")
        return (" " + " ".join(parts)) if parts else ""

    def error(self, what):
        op = f"aten.{_name(self.node)}" if self.node is not None else "the model"
        return ExportError(f"{op}{self.where()}: {what}")

    # Values ------------------------------------------------------------------
    def export(self):
        try:
            gm, names, self.concrete = remat_capture.capture(self.module, self.example)
        except remat_capture.CaptureError as e:
            raise ExportError(str(e)) from e
        graph = gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self.is_const = {n: n in self.concrete for n in graph.nodes}
        live = self.live_nodes(graph)
        for i, node in enumerate(placeholders[:-1]):
            self.values[node] = self.param(names[i], node)
        x = placeholders[-1]
        self.values[x] = self.m.input("x", list(self.example.shape),
                                      DTYPES[self.example.dtype])
        out = None
        for node in graph.nodes:
            self.node = node
            if node.op == "output":
                outs = [a for a in torch.utils._pytree.tree_flatten(node.args[0])[0]
                        if isinstance(a, torch.fx.Node)]
                if len(outs) != 1:
                    raise _outputs_error(len(outs))
                out = self.value(outs[0])
            elif node in live and not self.is_const[node] and node.op == "call_function":
                self.m.loc = node.meta.get("module_path") or None
                self.values[node] = self.call(node)
        self.m.loc = None
        self.node = None
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

    def live_nodes(self, graph):
        """Nodes the output depends on. An update of a parameter or the input
        (a copy_ into it, in the functional graph) is refused even when
        nothing reads it."""
        live, work = set(), [n for n in graph.nodes if n.op == "output"]
        while work:
            n = work.pop()
            if n in live:
                continue
            live.add(n)
            work.extend(n.all_input_nodes)
        for n in graph.nodes:
            if n.op == "call_function" and _name(n) in ("copy_", "copy") and n.args \
                    and isinstance(n.args[0], torch.fx.Node) \
                    and n.args[0].op == "placeholder":
                # The functional graph's copy_ has no location: name the op
                # whose result the model wrote into the argument.
                written = n.args[1]
                self.node = written if isinstance(written, torch.fx.Node) else n
                raise self.error("an in-place update of a parameter or the "
                                 "input: the step's arguments are read-only")
        return live

    def param(self, qualified, node):
        if qualified not in self.params:
            tensor = self.module.get_parameter(qualified)
            self.params[qualified] = self.m.param(qualified, list(tensor.shape))
            self.weights[qualified] = tensor.detach()
        return self.params[qualified]

    def value(self, a):
        """The train value of an fx node (constants materialized on first
        use, transposes when nothing folded them)."""
        if not isinstance(a, torch.fx.Node):
            raise self.error(f"expected a tensor operand, got {a!r}")
        if a not in self.values and self.is_const.get(a):
            return self.constant(self.concrete[a])
        v = self.values[a]
        if isinstance(v, _Transposed):
            v = self.values[a] = self.m.transpose(v.value, v.perm)
        if isinstance(v, _Mask):
            ones = self.constant(torch.ones(v.shape, dtype=self.torch_dtype))
            # train.dropout of ones is the mask over keep; times keep, the mask.
            mask = self.m.scale(self.dropout(ones, 1.0 - v.keep), v.keep * v.scale)
            v = self.values[a] = mask
        if isinstance(v, list):
            raise self.error("a list of tensors where one tensor is expected")
        return v

    def constant(self, tensor):
        if not isinstance(tensor, torch.Tensor):
            raise self.error(f"expected a tensor, got {tensor!r}")
        key = id(tensor)
        if key not in self.consts:
            if tensor.is_floating_point() or tensor.dtype == torch.bool:
                tensor = tensor.to(self.torch_dtype)  # a mask is 0/1
            dtype = DTYPES.get(tensor.dtype)
            if dtype is None:
                raise self.error(f"a constant of type {tensor.dtype}")
            self.consts[key] = (self.m.constant(tensor.detach().cpu().numpy(), dtype),
                                tensor)
        return self.consts[key][0]

    def scalar(self, v):
        return self.constant(torch.tensor(float(v), dtype=self.torch_dtype))

    def operand(self, a):
        """A tensor operand, or a Python number as a rank-0 constant."""
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return self.scalar(a)
        return self.value(a)

    # ATen ops ----------------------------------------------------------------
    def call(self, node):
        name = _name(node)
        args, kwargs = node.args, node.kwargs
        if node.target is operator.getitem:
            return self.getitem(node)
        base = name[:-1] if name.endswith("_") and not name.startswith("_") else name
        handler = getattr(self, "op_" + base.lstrip("_"), None)
        if base in _RESHAPES:
            return self.m.reshape(self.value(args[0]), _shape(node)) \
                if _shape(node) != self.value(args[0]).shape else self.value(args[0])
        if base in _IDENTITIES:  # keeps a lazy transpose or mask lazy
            return self.values[args[0]] if args[0] in self.values else self.value(args[0])
        if base in _COMPARISONS:
            return self.compare(base, *args)
        if base in _BITWISE:  # on masks only: the logical op
            self.expect_bool(args[0])
            handler = getattr(self, "op_" + _BITWISE[base])
        if base in _UNARY:
            return self.m.unary(_UNARY[base], self.value(args[0]))
        if handler is None:
            raise self.error("no train op for it")
        return handler(node, *args, **kwargs)

    def getitem(self, node):
        src, index = node.args
        v = self.values.get(src)
        if isinstance(v, list):
            item = v[index]
            return item() if callable(item) else item
        if _name(src) in ("native_batch_norm", "native_layer_norm", "native_dropout",
                          "max_pool2d_with_indices", "native_group_norm",
                          "_native_batch_norm_legit_functional",
                          "_native_batch_norm_legit",
                          "_native_batch_norm_legit_no_training") and index == 0:
            return v
        self.node = src
        raise self.error(f"its output {index} is used (only the first output "
                         "of this op is supported)")

    def op_convolution(self, node, x, w, b, stride, padding, dilation, transposed,
                       output_padding, groups):
        if transposed:
            raise self.error("transposed convolution")
        if len(stride) != 2:
            raise self.error(f"a {len(stride)}-D convolution (only 2-D)")
        y = self.m.conv2d(self.value(x), self.value(w), stride=list(stride),
                          padding=list(padding), groups=groups,
                          dilation=list(dilation))
        if b is not None:
            bias = self.value(b)
            y = self.m.add(y, self.m.reshape(bias, [bias.shape[0], 1, 1]), "biased")
        return y

    def affine_or_const(self, t, size, fill):
        return self.value(t) if t is not None else \
            self.constant(torch.full([size], float(fill), dtype=self.torch_dtype))

    def op_native_batch_norm(self, node, x, w, b, mean, var, training, momentum, eps):
        xv = self.value(x)
        c = xv.shape[1]
        g, beta = self.affine_or_const(w, c, 1.0), self.affine_or_const(b, c, 0.0)
        if training:
            if len(xv.shape) != 4:
                raise self.error(f"batch norm of a rank-{len(xv.shape)} tensor "
                                 "(only NCHW)")
            return self.m.batch_norm(xv, g, beta, eps)
        # Evaluation mode: the running statistics are constants.
        extra = [1] * (len(xv.shape) - 2)
        rm, rv = self.concrete[mean], self.concrete[var]
        shift = self.constant(rm.reshape([c] + extra))
        scale = self.constant((rv + eps).rsqrt().reshape([c] + extra))
        xhat = self.m.mul(self.m.sub(xv, shift), scale)
        return self.m.add(self.m.mul(xhat, self.m.reshape(g, [c] + extra)),
                          self.m.reshape(beta, [c] + extra))

    def op_native_batch_norm_legit_functional(self, node, x, w, b, mean, var,
                                              training, momentum, eps):
        return self.op_native_batch_norm(node, x, w, b, mean, var, training,
                                         momentum, eps)

    def op_native_batch_norm_legit(self, node, x, w, b, *rest):
        """PyTorch 2.x's batch norm: with running statistics (mean, var,
        training, momentum, eps) or without (training, momentum, eps)."""
        if len(rest) == 5:
            return self.op_native_batch_norm(node, x, w, b, *rest)
        training, momentum, eps = rest
        if not training:
            raise self.error("batch norm in evaluation mode without running "
                             "statistics")
        return self.op_native_batch_norm(node, x, w, b, None, None, True,
                                         momentum, eps)

    def op_native_batch_norm_legit_no_training(self, node, x, w, b, mean, var,
                                               momentum, eps):
        return self.op_native_batch_norm(node, x, w, b, mean, var, False,
                                         momentum, eps)

    def op_native_layer_norm(self, node, x, shape, w, b, eps):
        xv = self.value(x)
        k = math.prod(shape)
        g, beta = self.affine_or_const(w, k, 1.0), self.affine_or_const(b, k, 0.0)
        if len(shape) == 1:
            return self.m.layer_norm(xv, g, beta, eps)
        lead = xv.shape[:len(xv.shape) - len(shape)]
        flat = self.m.reshape(xv, lead + [k])
        y = self.m.layer_norm(flat, self.m.reshape(g, [k]) if len(g.shape) != 1 else g,
                              self.m.reshape(beta, [k]) if len(beta.shape) != 1 else beta,
                              eps)
        return self.m.reshape(y, xv.shape)

    def op_native_group_norm(self, node, x, w, b, n, c, hw, groups, eps):
        xv = self.value(x)
        k = (c // groups) * hw
        ones = self.constant(torch.ones(k, dtype=self.torch_dtype))
        zeros = self.constant(torch.zeros(k, dtype=self.torch_dtype))
        y = self.m.layer_norm(self.m.reshape(xv, [n, groups, k]), ones, zeros, eps)
        y = self.m.reshape(y, xv.shape)
        extra = [1] * (len(xv.shape) - 2)
        if w is not None:
            y = self.m.mul(y, self.m.reshape(self.value(w), [c] + extra))
        if b is not None:
            y = self.m.add(y, self.m.reshape(self.value(b), [c] + extra))
        return y

    def op_relu(self, node, x):
        return self.m.relu(self.value(x))

    def op_hardtanh(self, node, x, lo=-1.0, hi=1.0):
        return self.m.clamp(self.value(x), lo, hi)

    def op_clamp(self, node, x, lo=None, hi=None):
        if not all(isinstance(v, (int, float, type(None))) for v in (lo, hi)):
            raise self.error("clamp with tensor bounds")
        if lo is None and hi is None:
            return self.value(x)
        if lo == 0 and hi is None:
            return self.m.relu(self.value(x))
        return self.m.clamp(self.value(x), -math.inf if lo is None else lo,
                            math.inf if hi is None else hi)

    def op_clamp_min(self, node, x, lo):
        return self.op_clamp(node, x, lo, None)

    def op_clamp_max(self, node, x, hi):
        return self.op_clamp(node, x, None, hi)

    def op_gelu(self, node, x, approximate="none"):
        if approximate != "none":
            raise self.error(f"approximate='{approximate}': the dialect has the "
                             "exact (erf) form; use nn.GELU()")
        return self.m.gelu(self.value(x))

    def op_tanh(self, node, x):
        return self.m.tanh(self.value(x))

    def op_sigmoid(self, node, x):
        return self.m.sigmoid(self.value(x))

    def op_softplus(self, node, x, beta=1, threshold=20):
        if beta != 1 or threshold != 20:
            raise self.error("softplus with beta or threshold other than 1, 20")
        return self.m.unary("softplus", self.value(x))

    def op_leaky_relu(self, node, x, slope=0.01):
        return self.m.unary("leaky_relu", self.value(x), alpha=slope)

    def op_elu(self, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
        if scale != 1 or input_scale != 1:
            raise self.error("elu with scale (selu)")
        return self.m.unary("elu", self.value(x), alpha=alpha)

    def op_pow(self, node, x, exponent):
        if not isinstance(exponent, (int, float)) or not isinstance(x, torch.fx.Node):
            raise self.error("pow with a tensor exponent (only a constant)")
        if exponent == 2:
            v = self.value(x)
            return self.m.mul(v, v)
        return self.m.unary("pow", self.value(x), alpha=exponent)

    def op_neg(self, node, x):
        return self.m.scale(self.value(x), -1.0)

    def binary(self, op, a, b):
        if isinstance(a, torch.fx.Node) and isinstance(b, (int, float)) and \
                op in ("mul", "div") and not isinstance(b, bool):
            return self.m.scale(self.value(a), b if op == "mul" else 1.0 / b)
        return self.m.binary(op, self.operand(a), self.operand(b))

    def op_add(self, node, a, b, alpha=1):
        if isinstance(b, (int, float)):
            b *= alpha
            if b == 0:
                return self.value(a)
        elif alpha != 1:
            return self.m.add(self.operand(a), self.m.scale(self.value(b), alpha))
        return self.binary("add", a, b)

    def op_sub(self, node, a, b, alpha=1):
        if alpha != 1:
            b = self.m.scale(self.operand(b), alpha)
        return self.m.sub(self.operand(a), self.operand(b))

    def op_rsub(self, node, a, b, alpha=1):
        return self.op_sub(node, b, a, alpha)

    def mask(self, a):
        v = self.values.get(a) if isinstance(a, torch.fx.Node) else None
        return v if isinstance(v, _Mask) else None

    def op_mul(self, node, a, b):
        if isinstance(a, (int, float)):
            a, b = b, a
        # x * (mask / keep) on x's shape is train.dropout of x.
        for x, m in ((a, self.mask(b)), (b, self.mask(a))):
            if m is not None and isinstance(x, torch.fx.Node) and \
                    m.shape == _shape(node) and abs(m.scale * m.keep - 1) < 1e-12:
                return self.dropout(self.value(x), 1.0 - m.keep)
        if self.mask(a) is not None and isinstance(b, (int, float)):
            m = self.mask(a)
            return _Mask(m.shape, m.keep, m.scale * b)
        return self.binary("mul", a, b)

    def op_div(self, node, a, b, rounding_mode=None):
        if rounding_mode is not None:
            raise self.error(f"division with rounding_mode='{rounding_mode}'")
        m = self.mask(a)
        if m is not None and isinstance(b, (int, float)) and b:
            return _Mask(m.shape, m.keep, m.scale / b)
        return self.binary("div", a, b)

    def op_t(self, node, x):
        v = self.value(x)
        if len(v.shape) < 2:
            return v
        return _Transposed(v, [1, 0])

    def op_transpose(self, node, x, d0, d1):
        v = self.value(x)
        rank = len(v.shape)
        perm = list(range(rank))
        perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
        if perm == list(range(rank)):
            return v
        if rank >= 2 and perm == list(range(rank - 2)) + [rank - 1, rank - 2]:
            return _Transposed(v, perm)
        return self.m.transpose(v, perm)

    def op_permute(self, node, x, dims):
        v = self.value(x)
        perm = [d % len(v.shape) for d in dims]
        return v if perm == sorted(perm) else self.m.transpose(v, perm)

    def rhs(self, b):
        """A matmul's right operand: (value, transpose_rhs)."""
        v = self.values.get(b)
        if isinstance(v, _Transposed):
            return v.value, True
        return self.value(b), False

    def op_mm(self, node, a, b):
        rhs, t = self.rhs(b)
        return self.m.matmul(self.value(a), rhs, transpose_rhs=t)

    def op_addmm(self, node, bias, a, b, beta=1, alpha=1):
        if beta != 1 or alpha != 1:
            raise self.error("addmm with beta or alpha other than 1")
        y = self.op_mm(node, a, b)
        c = self.operand(bias)
        if c.shape == [y.shape[1]]:
            return self.m.bias_add(y, c)
        return self.m.add(y, c)

    def op_bmm(self, node, a, b):
        rhs, t = self.rhs(b)
        return self.m.batch_matmul(self.value(a), rhs, transpose_rhs=t)

    def op_expand(self, node, x, sizes, implicit=False):
        return self.expand_to(self.value(x), _shape(node))

    def expand_to(self, v, out):
        """v broadcast to `out`: size-1 and missing dims dropped by a reshape,
        then repeated by train.broadcast."""
        if v.shape == out:
            return v
        lead = len(out) - len(v.shape)
        shape = [1] * lead + v.shape
        kept = [i for i in range(len(out)) if i >= lead and shape[i] == out[i]]
        squeezed = [shape[i] for i in kept]
        if squeezed != v.shape:
            v = self.m.reshape(v, squeezed)
        new = [i for i in range(len(out)) if i not in kept]
        return self.m.expand(v, out, new)

    def op_repeat(self, node, x, repeats):
        v = self.value(x)
        lead = len(repeats) - len(v.shape)
        shape = [1] * lead + v.shape
        if lead:
            v = self.m.reshape(v, shape)
        # Tile: [r0, d0, r1, d1, ...] in row-major order is the repetition.
        inter = [d for pair in zip(repeats, shape) for d in pair]
        y = self.m.expand(v, inter, list(range(0, len(inter), 2)))
        return self.m.reshape(y, [r * d for r, d in zip(repeats, shape)])

    def pool_args(self, xv, kernel, stride, padding, ceil_mode, dilation=1):
        k, s, p = _pair(kernel), _pair(stride or kernel), _pair(padding)
        d = _pair(dilation)
        if d != [1, 1]:
            raise self.error("pooling with dilation")
        if ceil_mode:
            for i, size in enumerate(xv.shape[2:]):
                span = size + 2 * p[i] - k[i]
                if span % s[i]:
                    raise self.error("ceil_mode where it changes the output size "
                                     f"({size} with window {k[i]}, stride {s[i]}, "
                                     f"padding {p[i]})")
        return k, s, p

    def op_max_pool2d_with_indices(self, node, x, kernel, stride=(), padding=0,
                                   dilation=1, ceil_mode=False):
        xv = self.value(x)
        k, s, p = self.pool_args(xv, kernel, stride, padding, False, dilation)
        if ceil_mode:
            # The last window may hang over the far edge: pad that edge with
            # -inf, which no maximum takes, so floor division counts it.
            for axis in (2, 3):
                i, size = axis - 2, xv.shape[axis]
                # PyTorch's rule: ceil, but no window may start in the padding.
                out = -(-(size + 2 * p[i] - k[i]) // s[i]) + 1
                if (out - 1) * s[i] >= size + p[i]:
                    out -= 1
                need = (out - 1) * s[i] + k[i] - (size + 2 * p[i])
                if need > 0:
                    shape = list(xv.shape)
                    shape[axis] = need
                    pad = self.constant(torch.full(shape, -math.inf,
                                                   dtype=self.torch_dtype))
                    xv = self.m.concat([xv, pad], axis)
        return self.m.max_pool2d(xv, k, s, p)

    def op_max_pool2d(self, node, *args, **kwargs):
        return self.op_max_pool2d_with_indices(node, *args, **kwargs)

    def op_avg_pool2d(self, node, x, kernel, stride=(), padding=0, ceil_mode=False,
                      count_include_pad=True, divisor_override=None):
        xv = self.value(x)
        k, s, p = self.pool_args(xv, kernel, stride, padding, False)
        out = _shape(node)[2:]
        sizes = xv.shape[2:]
        # A last window over the far edge (ceil_mode): zeros there, which
        # add nothing; the divisor is fixed below.
        for i, size in enumerate(sizes):
            need = (out[i] - 1) * s[i] + k[i] - (size + 2 * p[i])
            if need > 0:
                shape = list(xv.shape)
                shape[2 + i] = need
                xv = self.m.concat([xv, self.constant(
                    torch.zeros(shape, dtype=self.torch_dtype))], 2 + i)
        y = self.m.avg_pool2d(xv, k, s, p)
        # train.avg_pool2d divides by the window's area; PyTorch by the
        # window within the padded input (count_include_pad), within the
        # input, or by divisor_override.
        def counts(i):
            full, inside = [], []
            for o in range(out[i]):
                start = o * s[i] - p[i]
                end = min(start + k[i], sizes[i] + p[i])
                full.append(end - start)
                inside.append(min(end, sizes[i]) - max(start, 0))
            return torch.tensor(full, dtype=torch.float64), \
                torch.tensor(inside, dtype=torch.float64)
        (fh, ih), (fw, iw) = counts(0), counts(1)
        if divisor_override:
            divisor = torch.full((out[0], out[1]), float(divisor_override),
                                 dtype=torch.float64)
        elif count_include_pad:
            divisor = fh[:, None] * fw[None, :]
        else:
            divisor = ih[:, None] * iw[None, :]
        factor = k[0] * k[1] / divisor
        if bool((factor != 1).any()):
            y = self.m.mul(y, self.constant(factor.to(self.torch_dtype)))
        return y

    def op_adaptive_avg_pool2d(self, node, x, size):
        xv = self.value(x)
        out = _pair(size)
        n, c, h, w = xv.shape
        if out == [1, 1]:
            return self.m.reshape(self.m.mean(xv, [2, 3]), [n, c, 1, 1])
        if out == [h, w]:
            return xv
        if out[0] % h == 0 and out[1] % w == 0 and out[0] // h == out[1] // w:
            return self.m.upsample(xv, out[0] // h)
        if h % out[0] == 0 and w % out[1] == 0:
            k = [h // out[0], w // out[1]]
            return self.m.avg_pool2d(xv, k, k, [0, 0])
        # Windows of varying size, as PyTorch cuts them: the mean of each
        # cell's slice, the cells joined row by row.
        def window(i, n, size):
            return (i * size) // n, -(-((i + 1) * size) // n)
        rows = []
        for i in range(out[0]):
            r0, r1 = window(i, out[0], h)
            cells = []
            for j in range(out[1]):
                c0, c1 = window(j, out[1], w)
                cell = self.m.slice(xv, [0, 0, r0, c0], [n, c, r1 - r0, c1 - c0]) \
                    if [r1 - r0, c1 - c0] != [h, w] else xv
                cells.append(self.m.reshape(self.m.mean(cell, [2, 3]), [n, c, 1, 1]))
            rows.append(cells[0] if len(cells) == 1 else self.m.concat(cells, 3))
        return rows[0] if len(rows) == 1 else self.m.concat(rows, 2)

    def reduce(self, op, node, x, dims=None, keepdim=False, dtype=None):
        v = self.value(x)
        rank = len(v.shape)
        dims = sorted({d % rank for d in dims}) if dims else list(range(rank))
        y = self.m.reduce(op, v, dims)
        return self.m.reshape(y, _shape(node)) if keepdim else y

    def op_mean(self, node, x, dims=None, keepdim=False, dtype=None):
        return self.reduce("mean", node, x, dims, keepdim)

    def op_sum(self, node, x, dims=None, keepdim=False, dtype=None):
        return self.reduce("sum", node, x, dims, keepdim)

    def op_norm(self, node, x, p=2, dims=None, keepdim=False, dtype=None):
        """The 2-norm, sqrt(sum(x * x)); others are refused."""
        if p != 2:
            raise self.error(f"a {p}-norm (only the 2-norm)")
        v = self.value(x)
        rank = len(v.shape)
        dims = sorted({d % rank for d in dims}) if dims else list(range(rank))
        y = self.m.unary("sqrt", self.m.reduce("sum", self.m.mul(v, v), dims))
        return self.m.reshape(y, _shape(node)) if keepdim else y

    def op_linalg_vector_norm(self, node, x, ord=2, dims=None, keepdim=False,
                              dtype=None):
        return self.op_norm(node, x, ord, dims, keepdim)

    def op_cat(self, node, tensors, dim=0):
        values = [self.value(t) for t in tensors if _shape(t) != [0]]
        if len(values) == 1:
            return values[0]
        return self.m.concat(values, dim % len(values[0].shape))

    def op_stack(self, node, tensors, dim=0):
        out = _shape(node)
        dim %= len(out)
        parts = [self.m.reshape(self.value(t), out[:dim] + [1] + out[dim + 1:])
                 for t in tensors]
        return parts[0] if len(parts) == 1 else self.m.concat(parts, dim)

    def slices(self, v, dim, sizes):
        out, at = [], 0
        for size in sizes:
            out.append(lambda at=at, size=size: self.slice(v, dim, at, size))
            at += size
        return out

    def slice(self, v, dim, start, size):
        if start == 0 and size == v.shape[dim]:
            return v
        offsets = [0] * len(v.shape)
        offsets[dim] = start
        shape = list(v.shape)
        shape[dim] = size
        return self.m.slice(v, offsets, shape)

    def op_constant_pad_nd(self, node, x, pad, value=0):
        v = self.value(x)
        for i in range(len(pad) // 2):
            dim = len(v.shape) - 1 - i
            before, after = pad[2 * i], pad[2 * i + 1]
            start = max(-before, 0)
            v = self.slice(v, dim, start, v.shape[dim] - start - max(-after, 0))
            parts = []
            for size in (before, after):
                shape = list(v.shape)
                shape[dim] = size
                parts.append(self.constant(torch.full(shape, float(value),
                                                      dtype=self.torch_dtype))
                             if size > 0 else None)
            items = [p for p in (parts[0], v, parts[1]) if p is not None]
            if len(items) > 1:
                v = self.m.concat(items, dim)
        return v

    def op_roll(self, node, x, shifts, dims=()):
        v = self.value(x)
        if not dims:
            raise self.error("roll over the flattened tensor")
        for shift, dim in zip(shifts, dims):
            dim %= len(v.shape)
            n = v.shape[dim]
            s = shift % n
            if s:
                v = self.m.concat([self.slice(v, dim, n - s, s),
                                   self.slice(v, dim, 0, n - s)], dim)
        return v

    def op_split(self, node, x, size, dim=0):
        v = self.value(x)
        dim %= len(v.shape)
        n = v.shape[dim]
        return self.slices(v, dim, [min(size, n - i) for i in range(0, n, size)])

    def op_split_with_sizes(self, node, x, sizes, dim=0):
        v = self.value(x)
        return self.slices(v, dim % len(v.shape), list(sizes))

    def op_unsafe_split(self, node, x, size, dim=0):
        return self.op_split(node, x, size, dim)

    def op_unsafe_split_with_sizes(self, node, x, sizes, dim=0):
        return self.op_split_with_sizes(node, x, sizes, dim)

    def op_unbind(self, node, x, dim=0):
        v = self.value(x)
        dim %= len(v.shape)
        shape = v.shape[:dim] + v.shape[dim + 1:]
        return [lambda i=i: self.m.reshape(self.slice(v, dim, i, 1), shape)
                for i in range(v.shape[dim])]

    def op_slice(self, node, x, dim=0, start=None, end=None, step=1):
        v = self.value(x)
        dim %= len(v.shape)
        n = v.shape[dim]
        start, end, _ = slice(start, end).indices(n)
        count = len(range(start, end, step))
        if step == 1:
            return self.slice(v, dim, start, count)
        # Every step-th element: the span as [count, step], its first column.
        span = count * step
        v = self.slice(v, dim, start, min(span, n - start))
        if span > n - start:
            shape = list(v.shape)
            shape[dim] = span - (n - start)
            zeros = self.constant(torch.zeros(shape, dtype=self.torch_dtype))
            v = self.m.concat([v, zeros], dim)
        grid = v.shape[:dim] + [count, step] + v.shape[dim + 1:]
        v = self.slice(self.m.reshape(v, grid), dim + 1, 0, 1)
        return self.m.reshape(v, grid[:dim] + [count] + grid[dim + 2:])

    def op_slice_scatter(self, node, base, src, dim=0, start=None, end=None, step=1):
        """base with a block along `dim` replaced by src (a write through a
        slice, made functional): the parts around it and src joined."""
        v = self.value(base)
        dim %= len(v.shape)
        n = v.shape[dim]
        start, end, _ = slice(start, end).indices(n)
        if step != 1:
            raise self.error(f"a write through a slice with step {step}")
        parts = [self.slice(v, dim, 0, start) if start > 0 else None,
                 self.operand(src),
                 self.slice(v, dim, end, n - end) if end < n else None]
        parts = [p for p in parts if p is not None]
        return parts[0] if len(parts) == 1 else self.m.concat(parts, dim)

    def op_select(self, node, x, dim, index):
        v = self.value(x)
        dim %= len(v.shape)
        return self.m.reshape(self.slice(v, dim, index % v.shape[dim], 1), _shape(node))

    def softmax(self, log, x, dim):
        v = self.value(x)
        rank = len(v.shape)
        dim %= rank
        fn = self.m.log_softmax if log else self.m.softmax
        if dim == rank - 1:
            return fn(v)
        perm = list(range(rank))
        perm[dim], perm[-1] = perm[-1], perm[dim]
        return self.m.transpose(fn(self.m.transpose(v, perm)), perm)

    def op_softmax(self, node, x, dim, half_to_float=False):
        return self.softmax(False, x, dim)

    def op_log_softmax(self, node, x, dim, half_to_float=False):
        return self.softmax(True, x, dim)

    def op_safe_softmax(self, node, x, dim, dtype=None):
        """Softmax with 0 on rows that are all -inf (PyTorch 2.x's attention
        math): a row is all -inf exactly when its maximum is."""
        v = self.value(x)
        dim %= len(v.shape)
        keep = list(v.shape)
        keep[dim] = 1
        top = self.m.reshape(self.m.reduce("amax", v, [dim]), keep)
        empty = self.m.compare("eq", top, self.scalar(-math.inf))
        return self.m.where(empty, self.scalar(0.0), self.softmax(False, x, dim))

    def op_all(self, node, x, dims=None, keepdim=False):
        self.expect_bool(x, "all")
        return self.reduce("amin", node, x, _dims(dims), keepdim)

    def op_any(self, node, x, dims=None, keepdim=False):
        self.expect_bool(x, "any")
        return self.reduce("amax", node, x, _dims(dims), keepdim)

    def index_operand(self, index, bound):
        """An integer index tensor: a constant (negative entries wrapped,
        range checked here) or a value the step reads (checked at run time)."""
        if self.is_const.get(index) and index not in self.values:
            c = self.concrete[index]
            if c.dtype == torch.bool or c.is_floating_point():
                raise self.error("indexing by a boolean mask or a float tensor")
            if c.numel() and (c.min() < -bound or c.max() >= bound):
                raise self.error(f"an index outside [-{bound}, {bound})")
            return self.constant(torch.remainder(c, bound).to(torch.int64))
        v = self.value(index)
        if not v.dtype.startswith("i"):
            raise self.error("indexing by a boolean mask or a float tensor")
        return v

    def take(self, v, dim, index):
        """result = v's slices along dim at `index` (any shape), in its place:
        the table [v.shape[dim], rest] of train.embedding, moved back."""
        rank = len(v.shape)
        ids = self.index_operand(index, v.shape[dim])
        perm = [dim] + [d for d in range(rank) if d != dim]
        moved = self.m.transpose(v, perm) if dim else v
        rest = moved.shape[1:]
        table = self.m.reshape(moved, [moved.shape[0], math.prod(rest)]) \
            if rank != 2 else moved
        rows = self.m.embedding(table, ids)
        k = len(ids.shape)
        out = self.m.reshape(rows, ids.shape + rest) if rank != 2 else rows
        if dim == 0:
            return out
        back = list(range(k, k + dim)) + list(range(k)) + \
            list(range(k + dim, k + rank - 1))
        return self.m.transpose(out, back)

    def op_embedding(self, node, w, ids, padding_idx=-1, scale_grad=False,
                     sparse=False):
        if scale_grad or sparse:
            raise self.error("embedding with scale_grad_by_freq or sparse")
        ids_v = self.index_operand(ids, _shape(w)[0])
        rows = self.m.embedding(self.value(w), ids_v)
        if padding_idx is None or padding_idx < 0:
            return rows
        # The padding row's value, but no gradient from where ids name it.
        pad = self.constant(torch.tensor(padding_idx, dtype=torch.int64
                                         if ids_v.dtype == "i64" else torch.int32))
        at_pad = self.m.reshape(self.m.compare("eq", ids_v, pad), ids_v.shape + [1])
        return self.m.where(at_pad, self.m.stop_gradient(rows), rows)

    def op_index(self, node, x, indices):
        v = self.value(x)
        tensors = [(d, i) for d, i in enumerate(indices) if i is not None]
        if len(tensors) != 1:
            raise self.error("indexing by several index tensors at once")
        return self.take(v, *tensors[0])

    def op_index_select(self, node, x, dim, index):
        v = self.value(x)
        return self.take(v, dim % len(v.shape), index)

    def op_gather(self, node, x, dim, index, sparse_grad=False):
        """out[..., i, ...] = x[..., index[..., i, ...], ...] along dim."""
        v = self.value(x)
        rank = len(v.shape)
        dim %= rank
        ishape = _shape(index)
        if self.is_const.get(index) and index not in self.values:
            # Flat positions into x as a [numel, 1] table.
            c = torch.remainder(self.concrete[index], v.shape[dim]).to(torch.int64)
            strides = [math.prod(v.shape[d + 1:]) for d in range(rank)]
            flat = torch.zeros(ishape, dtype=torch.int64)
            for d in range(rank):
                coord = c if d == dim else torch.arange(ishape[d]).reshape(
                    [-1 if e == d else 1 for e in range(rank)])
                flat = flat + coord * strides[d]
            table = self.m.reshape(v, [math.prod(v.shape), 1])
            rows = self.m.embedding(table, self.constant(flat))
            return self.m.reshape(rows, ishape)
        # An index the step reads, one per row along dim (a label picking
        # its class): the sum of x times a one-hot mask along dim.
        if ishape[dim] != 1 or any(ishape[d] != v.shape[d] for d in range(rank)
                                   if d != dim):
            raise self.error("gather by an index computed from the step's inputs "
                             "other than one index per row along the dimension")
        ids = self.index_operand(index, v.shape[dim])
        positions = torch.arange(v.shape[dim], dtype=torch.int64 if ids.dtype == "i64"
                                 else torch.int32)
        positions = positions.reshape([-1 if d == dim else 1 for d in range(rank)])
        hot = self.m.compare("eq", ids, self.constant(positions))
        picked = self.m.reduce("sum", self.m.where(hot, v, self.scalar(0.0)), [dim])
        return self.m.reshape(picked, ishape)

    def op_upsample_nearest2d(self, node, x, output_size=None, *scales):
        v = self.value(x)
        out = _shape(node)
        s = out[2] // v.shape[2]
        if out[2] != s * v.shape[2] or out[3] != s * v.shape[3]:
            raise self.error("nearest upsampling by a non-integer or unequal factor")
        return self.m.upsample(v, s)

    def dropout(self, v, p):
        if self.seed is None:
            self.seed = self.m.input("dropout.seed", [], "i64")
        offset = self.m.input(f"dropout.offset{self.dropouts}", [], "i64")
        self.dropouts += 1
        return self.m.dropout(v, self.seed, offset, float(p))

    def op_native_dropout(self, node, x, p, train):
        v = self.value(x)
        return self.dropout(v, p) if train and p else v

    def op_dropout(self, node, x, p, train):
        return self.op_native_dropout(node, x, p, train)

    def op_feature_dropout(self, node, x, p, train):
        if train and p:
            raise self.error("dropout of whole channels")
        return self.value(x)

    def op_bernoulli(self, node, t, p=0.5, generator=None):
        """A {0, 1} mask with keep probability p (dropout and stochastic
        depth draw it on a fresh tensor, scale it by 1 / p and multiply)."""
        if not isinstance(p, (int, float)):
            raise self.error("bernoulli with a tensor of probabilities")
        if p >= 1:
            return self.constant(torch.ones(_shape(node), dtype=self.torch_dtype))
        return _Mask(_shape(node), float(p), 1.0)

    # A boolean tensor, constant or computed, is a 0/1 mask of the model's
    # float type (see constant() and compare()).
    def op_where(self, node, cond, a, b):
        return self.m.where(self.value(cond), self.operand(a), self.operand(b))

    def op_masked_fill(self, node, x, mask, value):
        xv = self.value(x)
        if self.is_const.get(mask) and mask not in self.values:
            m = self.concrete[mask].bool()
            if value == float("-inf") and self.causal(xv, m):
                return self.m.causal_mask(xv)
        return self.m.where(self.value(mask), self.operand(value), xv)

    # Comparisons give 0/1 masks of the model's float type; logic on masks
    # is arithmetic on them.
    def compare(self, predicate, a, b):
        if isinstance(a, (int, float)):  # a reflected comparison
            a, b = b, a
            predicate = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(predicate,
                                                                            predicate)
        av = self.value(a)
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            if av.dtype.startswith("i"):
                if b != int(b):
                    raise self.error(f"an integer tensor compared with {b}")
                bv = self.constant(torch.tensor(int(b), dtype=_INT_DTYPES[av.dtype]))
            else:
                bv = self.constant(torch.tensor(float(b), dtype=self.torch_dtype))
        else:
            bv = self.value(b)
        if av.dtype != bv.dtype:
            raise self.error(f"a comparison of {av.dtype} with {bv.dtype}")
        return self.m.compare(predicate, av, bv)

    def op_logical_not(self, node, m):
        return self.m.sub(self.scalar(1.0), self.value(m))

    def op_logical_and(self, node, a, b):
        return self.m.mul(self.value(a), self.value(b))

    def op_logical_or(self, node, a, b):
        return self.m.binary("maximum", self.value(a), self.value(b))

    def op_logical_xor(self, node, a, b):
        return self.m.compare("ne", self.value(a), self.value(b))

    def expect_bool(self, a, what="bitwise arithmetic"):
        if _dtype(a) != torch.bool:
            raise self.error(f"{what} on a tensor that is not a mask")

    def op_maximum(self, node, a, b):
        return self.m.binary("maximum", self.operand(a), self.operand(b))

    def op_minimum(self, node, a, b):
        return self.m.binary("minimum", self.operand(a), self.operand(b))

    def op_amax(self, node, x, dims=(), keepdim=False):
        return self.reduce("amax", node, x, dims, keepdim)

    def op_amin(self, node, x, dims=(), keepdim=False):
        return self.reduce("amin", node, x, dims, keepdim)

    def extremum(self, kind, node, x, other):
        if other is None:  # over every element, ties split as in amax
            return self.reduce("a" + kind, node, x)
        if isinstance(other, torch.fx.Node):
            return self.m.binary(kind + "imum", self.value(x), self.value(other))
        raise self.error(f"{kind} over a dimension, which also returns indices "
                         f"and sends the gradient to one of tied elements: "
                         f"use torch.a{kind}, which splits it")

    def op_max(self, node, x, other=None, keepdim=False):
        return self.extremum("max", node, x, other)

    def op_min(self, node, x, other=None, keepdim=False):
        return self.extremum("min", node, x, other)

    @staticmethod
    def causal(xv, m):
        t = xv.shape[-1]
        if len(xv.shape) < 2 or xv.shape[-2] != t or m.dim() < 2 or \
                list(m.shape[-2:]) != [t, t]:
            return False
        upper = torch.ones(t, t, dtype=torch.bool).triu(1)
        return bool((m == upper).all())

    def op_to_copy(self, node, x, dtype=None, **kwargs):
        if dtype == torch.bool:  # x != 0 as a mask
            return self.compare("ne", x, 0)
        v = self.value(x)
        if _dtype(x) == torch.bool and dtype is not None and dtype.is_floating_point:
            target = DTYPES.get(dtype)
            return v if target == v.dtype else self.m.cast(v, target)
        target = DTYPES.get(dtype) if dtype is not None else v.dtype
        if target == v.dtype:
            return v
        if target not in ("f16", "bf16", "f32", "f64"):
            raise self.error(f"a conversion to {dtype}")
        return self.m.cast(v, target)

    def op_as_strided(self, node, x, size, stride, offset=None):
        v = self.value(x)
        contiguous = [math.prod(size[i + 1:]) for i in range(len(size))]
        if (offset or 0) == 0 and math.prod(size) == math.prod(v.shape) and \
                all(st == c for st, z, c in zip(stride, size, contiguous) if z != 1):
            return self.m.reshape(v, list(size)) if list(size) != v.shape else v
        raise self.error("a strided view other than a contiguous reshape")

    def op_detach(self, node, x):
        v = self.value(x)
        if v.dtype.startswith("i") or v.name in self.detached:
            return v  # integers carry no gradient; detach of a detach
        v = self.m.stop_gradient(v)
        self.detached.add(v.name)
        return v


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
        if not isinstance(out, torch.Tensor):
            raise _outputs_error(len(torch.utils._pytree.tree_flatten(out)[0]))
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
