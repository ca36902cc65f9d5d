"""A small writer of `train` dialect models, shared by the example generators.

Each method emits one op, infers its result shape the way the op's verifier
does, and returns the result as a Value. Nothing here checks more than it
must: remat-opt's verifiers are the authority on what is valid.
"""
import math
import sys


class Value:
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, list(shape), dtype

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)


def tensor_type(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def i64_array(values):
    return "array<i64" + (": " + ", ".join(map(str, values)) if values else "") + ">"


def f64_attr(v):
    """A float attribute MLIR parses: 1e-05 needs its decimal point, and
    infinities are written as their bits."""
    if math.isinf(v):
        return ("0x7FF0000000000000" if v > 0 else "0xFFF0000000000000") + " : f64"
    text = repr(float(v))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return f"{text} : f64"


def broadcast_shape(a, b):
    rank = max(len(a), len(b))
    a = [1] * (rank - len(a)) + a
    b = [1] * (rank - len(b)) + b
    return [max(x, y) for x, y in zip(a, b)]


class Model:
    def __init__(self, name, dtype="f32", header=""):
        self.name, self.dtype, self.header = name, dtype, header
        self.args, self.body, self.used = [], [], set()
        # Name location of the ops emitted next (the exporter sets it to the
        # module path each op comes from), or None.
        self.loc = None

    # Arguments ------------------------------------------------------------
    def _arg(self, name, shape, role, dtype):
        ssa = name.replace(".", "_")
        if not (ssa[0].isalpha() or ssa[0] == "_"):
            ssa = "p" + ssa  # %0_weight would read as a result number
        value = Value("%" + ssa, shape, dtype or self.dtype)
        self.args.append(f'{value.name}: {value.type} '
                         f'{{train.role = #train<role {role}>, train.name = "{name}"}}')
        return value

    def param(self, name, shape):
        return self._arg(name, shape, "param", None)

    def input(self, name, shape, dtype=None):
        return self._arg(name, shape, "input", dtype)

    def label(self, name, shape, dtype=None):
        return self._arg(name, shape, "label", dtype)

    # Ops ------------------------------------------------------------------
    def _fresh(self, hint):
        base, n = "%" + hint, 0
        while f"{base}{n}" in self.used:
            n += 1
        self.used.add(f"{base}{n}")
        return f"{base}{n}"

    def _emit(self, op, operands, attrs, types, shape, hint, dtype=None):
        result = Value(self._fresh(hint), shape, dtype or operands[0].dtype)
        attr_text = ""
        if attrs:
            attr_text = " {" + ", ".join(attrs) + "}"
        loc = f' loc("{self.loc}")' if self.loc else ""
        self.body.append(f"  {result.name} = train.{op} "
                         + ", ".join(v.name for v in operands)
                         + f"{attr_text} : {types(result)}{loc}")
        return result

    def constant(self, array, dtype):
        """An arith.constant holding a numpy array's row-major data."""
        result = Value(self._fresh("cst"), list(array.shape), dtype)
        # One element's bytes is a splat.
        flat = array.reshape(-1)
        if flat.size > 1 and (flat == flat[0]).all():
            flat = flat[:1]
        data = flat.astype(flat.dtype.newbyteorder("<")).tobytes()
        self.body.append(f'  {result.name} = arith.constant '
                         f'dense<"0x{data.hex().upper()}"> : {result.type}')
        return result

    def _same(self, op, operands, hint, attrs=()):
        return self._emit(op, operands, list(attrs), lambda r: operands[0].type,
                          operands[0].shape, hint)

    def _to(self, op, x, shape, hint, attrs=()):
        return self._emit(op, [x], list(attrs), lambda r: f"{x.type} -> {r.type}",
                          shape, hint)

    def binary(self, op, a, b, hint=None):
        shape = broadcast_shape(a.shape, b.shape)
        if a.shape == b.shape:
            types = lambda r: a.type
        else:
            types = lambda r: f"{a.type}, {b.type} -> {r.type}"
        return self._emit(op, [a, b], [], types, shape, hint or op)

    def add(self, a, b, hint="add"):
        return self.binary("add", a, b, hint)

    def mul(self, a, b, hint="mul"):
        return self.binary("mul", a, b, hint)

    def compare(self, predicate, a, b):
        """train.compare: a 0/1 mask of the model's float type."""
        shape = broadcast_shape(a.shape, b.shape)
        dtype = self.dtype if a.dtype.startswith("i") else a.dtype
        return self._emit("compare", [a, b], [f"predicate = #train<cmp {predicate}>"],
                          lambda r: f"{a.type}, {b.type} -> {r.type}", shape, "mask",
                          dtype)

    def where(self, cond, a, b):
        shape = broadcast_shape(broadcast_shape(cond.shape, a.shape), b.shape)
        return self._emit("where", [cond, a, b], [],
                          lambda r: f"{cond.type}, {a.type}, {b.type} -> {r.type}",
                          shape, "picked")

    def stop_gradient(self, x):
        return self._same("stop_gradient", [x], "detached")

    def relu(self, x):
        return self._same("relu", [x], "relu")

    def gelu(self, x):
        return self._same("gelu", [x], "gelu")

    def softmax(self, x):
        return self._same("softmax", [x], "softmax")

    def causal_mask(self, x):
        return self._same("causal_mask", [x], "masked")

    def scale(self, x, factor):
        # A broadcast over no new dimension is a multiplication by a constant.
        return self._to("broadcast", x, x.shape, "scaled",
                        [f"dims = {i64_array([])}", f"scale = {f64_attr(factor)}"])

    def matmul(self, a, b, transpose_rhs=False):
        n = b.shape[0] if transpose_rhs else b.shape[1]
        attrs = ["transpose_rhs"] if transpose_rhs else []
        return self._emit("matmul", [a, b], attrs,
                          lambda r: f"{a.type}, {b.type} -> {r.type}",
                          [a.shape[0], n], "mm")

    def batch_matmul(self, a, b, transpose_rhs=False):
        n = b.shape[1] if transpose_rhs else b.shape[2]
        attrs = ["transpose_rhs"] if transpose_rhs else []
        return self._emit("batch_matmul", [a, b], attrs,
                          lambda r: f"{a.type}, {b.type} -> {r.type}",
                          [a.shape[0], a.shape[1], n], "bmm")

    def bias_add(self, x, b):
        return self._emit("bias_add", [x, b], [], lambda r: f"{x.type}, {b.type}",
                          x.shape, "biased")

    def linear(self, x, w, b):
        return self.bias_add(self.matmul(x, w), b)

    def reshape(self, x, shape):
        assert math.prod(shape) == math.prod(x.shape), (x.shape, shape)
        return self._to("reshape", x, shape, "reshaped")

    def transpose(self, x, perm):
        return self._to("transpose", x, [x.shape[p] for p in perm], "transposed",
                        [f"permutation = {i64_array(perm)}"])

    def mean(self, x, dims):
        return self.reduce("mean", x, dims)

    def reduce(self, op, x, dims):
        shape = [d for i, d in enumerate(x.shape) if i not in dims]
        return self._to(op, x, shape, op, [f"dims = {i64_array(dims)}"])

    def expand(self, x, shape, dims):
        """train.broadcast: x repeated along the result dimensions `dims`."""
        return self._to("broadcast", x, shape, "expanded", [f"dims = {i64_array(dims)}"])

    def slice(self, x, offsets, shape):
        return self._to("slice", x, shape, "sliced", [f"offsets = {i64_array(offsets)}"])

    def cast(self, x, dtype):
        return self._emit("cast", [x], [], lambda r: f"{x.type} -> {r.type}",
                          x.shape, "cast", dtype)

    def unary(self, kind, x, alpha=None):
        """train.unary: an elementwise function of one tensor."""
        attrs = [f"kind = #train<unary {kind}>"]
        if alpha is not None:
            attrs.append(f"alpha = {f64_attr(alpha)}")
        return self._same("unary", [x], kind, attrs)

    def _norm(self, op, x, g, b, hint, eps):
        attrs = [] if eps is None else [f"epsilon = {f64_attr(eps)}"]
        return self._emit(op, [x, g, b], attrs, lambda r: f"{x.type}, {g.type}",
                          x.shape, hint)

    def layer_norm(self, x, g, b, eps=None):
        return self._norm("layer_norm", x, g, b, "ln", eps)

    def batch_norm(self, x, g, b, eps=None):
        return self._norm("batch_norm", x, g, b, "bn", eps)

    def sub(self, a, b):
        return self.binary("sub", a, b)

    def div(self, a, b):
        return self.binary("div", a, b)

    def clamp(self, x, lo, hi):
        return self._same("clamp", [x], "clamped",
                          [f"min = {f64_attr(lo)}", f"max = {f64_attr(hi)}"])

    def tanh(self, x):
        return self._same("tanh", [x], "tanh")

    def sigmoid(self, x):
        return self._same("sigmoid", [x], "sigmoid")

    def log_softmax(self, x):
        return self._same("log_softmax", [x], "logsm")

    def mse_loss(self, x, y):
        return self._emit("mse_loss", [x, y], [], lambda r: f"{x.type} -> {r.type}",
                          [], "loss")

    def dropout(self, x, seed, offset, probability):
        return self._emit("dropout", [x, seed, offset],
                          [f"probability = {f64_attr(probability)}"],
                          lambda r: x.type, x.shape, "dropped")

    def embedding(self, table, ids):
        return self._emit("embedding", [table, ids], [],
                          lambda r: f"{table.type}, {ids.type} -> {r.type}",
                          ids.shape + [table.shape[1]], "embedded")

    def cross_entropy(self, logits, labels):
        return self._emit("cross_entropy", [logits, labels], [],
                          lambda r: f"{logits.type}, {labels.type} -> {r.type}",
                          [], "loss")

    def conv2d(self, x, w, stride=1, padding=0, groups=1, dilation=1):
        pair = lambda v: list(v) if isinstance(v, (tuple, list)) else [v, v]
        stride, padding, dilation = pair(stride), pair(padding), pair(dilation)
        n, _, h, wd = x.shape
        f, _, kh, kw = w.shape
        out = [n, f,
               (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
               (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1]
        attrs = []
        if stride != [1, 1]:
            attrs.append(f"strides = {i64_array(stride)}")
        if padding != [0, 0]:
            attrs.append(f"padding = {i64_array(padding)}")
        if dilation != [1, 1]:
            attrs.append(f"dilation = {i64_array(dilation)}")
        if groups != 1:
            attrs.append(f"groups = {groups}")
        return self._emit("conv2d", [x, w], attrs,
                          lambda r: f"{x.type}, {w.type} -> {r.type}", out, "conv")

    def _pool(self, op, x, kernel, stride, padding):
        pair = lambda v: list(v) if isinstance(v, (tuple, list)) else [v, v]
        k, s, p = pair(kernel), pair(stride), pair(padding)
        n, c, h, w = x.shape
        out = [n, c, (h + 2 * p[0] - k[0]) // s[0] + 1,
               (w + 2 * p[1] - k[1]) // s[1] + 1]
        attrs = [f"kernel = {i64_array(k)}", f"strides = {i64_array(s)}"]
        if p != [0, 0]:
            attrs.append(f"padding = {i64_array(p)}")
        return self._to(op, x, out, "pooled", attrs)

    def max_pool2d(self, x, kernel, stride, padding=0):
        return self._pool("max_pool2d", x, kernel, stride, padding)

    def avg_pool2d(self, x, kernel, stride, padding=0):
        return self._pool("avg_pool2d", x, kernel, stride, padding)

    def upsample(self, x, scale):
        n, c, h, w = x.shape
        return self._to("upsample_nearest2d", x, [n, c, h * scale, w * scale],
                        "upsampled", [f"scale = {scale}"])

    def concat(self, values, axis):
        shape = list(values[0].shape)
        shape[axis] = sum(v.shape[axis] for v in values)
        types = lambda r: ", ".join(v.type for v in values) + f" -> {r.type}"
        return self._emit("concat", values, [f"axis = {axis}"], types, shape, "cat")

    # Output ---------------------------------------------------------------
    def text(self, loss):
        lines = [self.header] if self.header else []
        lines.append(f"func.func @{self.name}(" + ",\n    ".join(self.args)
                     + f") -> {loss.type} {{")
        lines += self.body
        lines.append(f"  return {loss.name} : {loss.type}")
        lines.append("}")
        return "\n".join(lines) + "\n"


def generated_by(script):
    """The header line of a generated model: the command, less its output."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg in ("-o", "--output"):
            skip = True
        elif not arg.startswith(("-o", "--output=")):
            args.append(arg)
    return " ".join([f"// Generated by examples/{script}"] + args)


def write(text, path):
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
