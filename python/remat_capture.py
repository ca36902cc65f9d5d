"""ATen-level capture of a PyTorch module's forward pass.

PyTorch's own tracer (`make_fx`) runs the module's Python on real tensors
and records the ATen ops it dispatches, so shape-dependent Python, functional
calls and library modules need no case of their own. Parameters are the
graph's inputs (through `functional_call`, so the user's module is not
changed); buffers are copied and read as constants. Each recorded node
carries in its meta the path of the innermost module whose forward made it
(`module_path`) and the innermost source line outside PyTorch (`source`).
"""
import contextlib
import os
import traceback

import torch
from torch.fx.experimental.proxy_tensor import PythonKeyTracer, make_fx

try:  # PyTorch 2.x
    from torch.func import functional_call, functionalize
except ImportError:  # PyTorch 1.13, Debian's
    from functorch.experimental import functionalize
    from torch.nn.utils.stateless import functional_call

# ATen ops that read only their operand's shape and type: constants.
FACTORIES = {"new_zeros", "new_ones", "new_full", "new_empty", "zeros_like",
             "ones_like", "full_like", "empty_like", "zero"}
# ATen ops that draw random numbers: never folded into constants.
RANDOM = {"bernoulli", "bernoulli_", "native_dropout", "rand", "rand_like",
          "randn", "randn_like", "uniform_", "normal_", "randint", "randperm"}

# Frames that are not the user's: PyTorch, functorch, the standard library
# and the exporter itself (python/zoo.py, beside it, is a user's model).
_PACKAGES = os.path.dirname(os.path.dirname(torch.__file__))
_NOT_USER = (os.path.join(_PACKAGES, "torch") + os.sep,
             os.path.join(_PACKAGES, "functorch") + os.sep,
             os.path.dirname(contextlib.__file__) + os.sep)
_EXPORTER = {os.path.join(os.path.dirname(os.path.abspath(__file__)), f)
             for f in ("remat_capture.py", "remat_export.py")}


class CaptureError(Exception):
    pass


def user_frame(frames):
    """The innermost frame that is not PyTorch's, the exporter's or the
    standard library's, as 'file:line', or ''."""
    for f in reversed(frames):
        path = os.path.abspath(f.filename)
        if not path.startswith(_NOT_USER) and path not in _EXPORTER:
            return f"{f.filename}:{f.lineno}"
    return ""


@contextlib.contextmanager
def _recording(root):
    names = {}
    for name, m in root.named_modules(remove_duplicate=False):
        names.setdefault(id(m), name)
    stack = []
    call_module, create_node = PythonKeyTracer.call_module, PythonKeyTracer.create_node

    def call(self, m, forward, args, kwargs):
        stack.append(names.get(id(m), ""))
        try:
            return forward(*args, **kwargs)
        finally:
            stack.pop()

    def create(self, *args, **kwargs):
        node = create_node(self, *args, **kwargs)
        node.meta["module_path"] = next((p for p in reversed(stack) if p), "")
        node.meta["source"] = user_frame(traceback.extract_stack()[:-1])
        return node

    PythonKeyTracer.call_module, PythonKeyTracer.create_node = call, create
    try:
        yield
    finally:
        PythonKeyTracer.call_module = call_module
        PythonKeyTracer.create_node = create_node


def op_name(node):
    """'add_' for aten.add_.Tensor, the function's name otherwise."""
    packet = getattr(node.target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(node.target, "__name__", str(node.target))


def _refresh_flat_weights(rnn):
    rnn._flat_weights = [getattr(rnn, n) if hasattr(rnn, n) else None
                         for n in rnn._flat_weights_names]


def _decompositions():
    """PyTorch's own decompositions of fused kernels that tracing would
    otherwise record whole: CPU flash attention (PyTorch 2.x's
    nn.MultiheadAttention and F.scaled_dot_product_attention) into its
    math form."""
    names = ["_scaled_dot_product_flash_attention_for_cpu"]
    ops = [getattr(torch.ops.aten, n).default for n in names
           if hasattr(torch.ops.aten, n)]
    if not ops:
        return {}
    from torch._decomp import get_decompositions
    return get_decompositions(ops)


def capture(module, example):
    """Returns (graph module, parameter names in placeholder order, the
    constant nodes: those that depend on no parameter, input or random op,
    with their values). The graph is functional: `functionalize` turns
    in-place updates and writes through views into copies, and an update of
    an argument into a final `copy_` into it. The module runs in its current
    mode."""
    params = list(module.named_parameters())
    buffers = {k: v.detach().clone() for k, v in module.named_buffers()}

    def forward(flat, x):
        state = dict(buffers)
        state.update({name: p for (name, _), p in zip(params, flat)})
        return functional_call(module, state, (x,))

    flat = [p.detach() for _, p in params]
    # Recurrent modules cache their weights in _flat_weights, which
    # functional_call does not refresh: rebuild the cache inside the call.
    rnns = [m for m in module.modules() if hasattr(m, "_flat_weights_names")]
    hooks = [m.register_forward_pre_hook(lambda m, args: _refresh_flat_weights(m))
             for m in rnns]
    try:
        with torch.no_grad(), _recording(module):
            gm = make_fx(functionalize(forward),
                         decomposition_table=_decompositions())(flat, example)
    except Exception as e:  # make_fx raises several kinds
        where = user_frame(traceback.extract_tb(e.__traceback__))
        text = str(e).strip()
        message = text.splitlines()[0] if text else type(e).__name__
        if "data-dependent" in text or "value out of a tracing tensor" in text:
            message = ("data-dependent control flow (a tensor's value read "
                       "as a Python number or bool)")
        at = f" at {where}" if where else ""
        raise CaptureError(f"PyTorch cannot trace the model{at}: {message}") from e
    finally:
        for h in hooks:
            h.remove()
        for m in rnns:
            _refresh_flat_weights(m)
    # A parameter read as a constant (a module that keeps its own reference
    # to it) would get no gradient: refuse.
    owned = {p.data_ptr(): name for name, p in params}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            t = getattr(gm, n.target)
            if isinstance(t, torch.Tensor) and t.data_ptr() in owned:
                path = n.meta.get("module_path")
                raise CaptureError(
                    f"parameter '{owned[t.data_ptr()]}' is read as a constant"
                    f"{' in ' + repr(path) if path else ''}: its module keeps a "
                    "reference that functional_call does not replace, so it "
                    "would get no gradient")
    consts = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr" or (n.op == "call_function" and op_name(n) not in RANDOM
                                  and (op_name(n) in FACTORIES or all(
                                      i in consts for i in n.all_input_nodes))):
            consts[n] = None

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n in consts:
                consts[n] = torch.utils._pytree.tree_map(
                    lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)
            return value

    with torch.no_grad():
        Recorder(gm).run(flat, example)
    return gm, [name for name, _ in params], consts
