"""remat.compile and the in-process Step (see the package's docstring)."""

import ctypes
import hashlib
import json
import os
import pathlib
import resource
import shutil
import subprocess
import tempfile

import numpy
import torch

import remat_export

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16,
                 "f32": torch.float32, "f64": torch.float64,
                 "i32": torch.int32, "i64": torch.int64}
_NUMPY_DTYPES = {"f16": numpy.float16, "f32": numpy.float32,
                 "f64": numpy.float64, "i32": numpy.int32, "i64": numpy.int64}


class RematError(Exception):
    """A model, an input or an option Remat cannot take; the message says
    which and why."""


def _build_dir():
    return pathlib.Path(os.environ.get("REMAT_BUILD", _ROOT / "build"))


def _tool(name):
    """The path of one of Remat's built tools (remat-compile, remat-solve)."""
    path = _build_dir() / "bin" / name
    if not path.exists():
        raise RematError(f"{path} does not exist: build Remat first "
                         "(./utils/build.sh) or set REMAT_BUILD")
    return str(path)


_runtime = None


def _load_runtime():
    """libremat_runtime.so, loaded globally so that a step's library, which
    leaves the runtime's symbols undefined, resolves them against it."""
    global _runtime
    if _runtime is not None:
        return _runtime
    path = _build_dir() / "lib" / "libremat_runtime.so"
    if not path.exists():
        raise RematError(f"the runtime library {path} does not exist: build "
                         "Remat first (./utils/build.sh) or set REMAT_BUILD")
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    c = ctypes
    lib.remat_step_open.restype = c.c_void_p
    lib.remat_step_open.argtypes = [c.c_char_p, c.c_char_p, c.c_size_t]
    lib.remat_step_close.argtypes = [c.c_void_p]
    lib.remat_step_num_arguments.restype = c.c_int64
    lib.remat_step_num_arguments.argtypes = [c.c_void_p]
    lib.remat_step_argument.restype = c.c_void_p
    lib.remat_step_argument.argtypes = [c.c_void_p, c.c_int64]
    lib.remat_step_bind_argument.restype = c.c_int
    lib.remat_step_bind_argument.argtypes = [c.c_void_p, c.c_int64, c.c_void_p,
                                             c.c_size_t, c.c_char_p, c.c_size_t]
    lib.remat_step_upload.argtypes = [c.c_void_p]
    lib.remat_step_set_hyperparameters.argtypes = [c.c_void_p, c.c_int64,
                                                   c.c_double]
    lib.remat_step_download.argtypes = [c.c_void_p]
    lib.remat_step_run_results.restype = c.c_int
    lib.remat_step_run_results.argtypes = [c.c_void_p, c.POINTER(c.c_double),
                                           c.POINTER(c.c_double),
                                           c.POINTER(c.c_void_p), c.c_int64,
                                           c.c_char_p, c.c_size_t]
    lib.remat_step_release_results.argtypes = [c.c_void_p]
    lib.remat_step_run.restype = c.c_int
    lib.remat_step_run.argtypes = [c.c_void_p, c.POINTER(c.c_double),
                                   c.POINTER(c.c_double), c.c_char_p,
                                   c.c_size_t]
    lib.remat_step_current_bytes.restype = c.c_int64
    lib.remat_step_current_bytes.argtypes = [c.c_void_p]
    lib.remat_step_peak_bytes.restype = c.c_int64
    lib.remat_step_peak_bytes.argtypes = [c.c_void_p]
    lib.remat_step_reset_peak.argtypes = [c.c_void_p]
    _runtime = lib
    return lib


def _cache_dir(cache_dir):
    if cache_dir is not None:
        return pathlib.Path(cache_dir)
    if os.environ.get("REMAT_CACHE"):
        return pathlib.Path(os.environ["REMAT_CACHE"])
    return pathlib.Path.home() / ".cache" / "remat"


def _compile_flags(memory_limit, solver, target, optimizer, search_seconds,
                   cost_model="flops", target_desc=None, cost_profile=None):
    flags = [f"--target={target}", f"--optimizer={optimizer.spec()}",
             "--runtime-lr", f"--learning-rate={optimizer.lr!r}",
             f"--cost-model={cost_model}"]
    if target_desc is not None:
        flags.append(f"--target-desc={os.path.abspath(target_desc)}")
    if cost_profile is not None:
        flags.append(f"--cost-profile={os.path.abspath(cost_profile)}")
    if memory_limit is not None:
        if isinstance(memory_limit, (int, float)) and not isinstance(
                memory_limit, bool):
            memory_limit = str(int(memory_limit))
        flags += [f"--memory-limit={memory_limit}", f"--solver={solver}"]
        if search_seconds:
            flags.append(f"--search-seconds={search_seconds!r}")
    return flags


def _export(model, example_inputs, loss):
    """The model's forward and loss as MLIR text, and the exporter (which
    holds the weights)."""
    if loss not in ("cross_entropy", "mse"):
        raise RematError(f"loss must be 'cross_entropy' or 'mse', got {loss!r}")
    if not isinstance(example_inputs, (tuple, list)) or \
            len(example_inputs) != 2:
        raise RematError("example_inputs must be (input, labels)")
    x, _ = (torch.as_tensor(t) for t in example_inputs)
    exporter = remat_export.Exporter(model, x.cpu(), loss, "model")
    try:
        return exporter.export(), exporter
    except remat_export.ExportError as e:
        raise RematError(str(e)) from None


def _default_optimizer(optimizer, learning_rate):
    from ._optim import SGD, _Optimizer
    if optimizer is None:
        return SGD(lr=0.01 if learning_rate is None else learning_rate)
    if learning_rate is not None:
        raise RematError("give the learning rate to the optimizer, not both")
    if not isinstance(optimizer, _Optimizer):
        raise RematError("optimizer must be remat.SGD, remat.Adam or "
                         f"remat.AdamW, got {type(optimizer).__name__}")
    return optimizer


def profile(model, example_inputs, path, loss="cross_entropy", optimizer=None,
            learning_rate=None, steps=3):
    """Times each op of `model`'s training step (CPU, no memory limit) over
    `steps` steps after a warm-up one, and writes the times to `path`, for
    compile(..., cost_profile=path): the solver then prices recomputation
    by measured time. Give the optimizer and loss compile will get (their
    ops are timed too). Returns the profile as a dict."""
    optimizer = _default_optimizer(optimizer, learning_rate)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise RematError(f"steps must be a positive integer, got {steps!r}")
    text, _ = _export(model, example_inputs, loss)
    with tempfile.TemporaryDirectory(prefix="remat-profile.") as work:
        work = pathlib.Path(work)
        (work / "model.mlir").write_text(text)
        flags = _compile_flags(None, "auto", "cpu", optimizer, 0)
        r = subprocess.run([_tool("remat-compile"), str(work / "model.mlir"),
                            "-o", str(work / "profile.so"), "--profile-ops",
                            *flags], capture_output=True, text=True)
        if r.returncode != 0:
            raise RematError(r.stderr.strip() or "remat-compile failed")
        r = subprocess.run([_tool("remat-run"), str(work / "profile.json"),
                            f"--steps={steps + 1}", f"--profile={path}",
                            "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RematError(r.stderr.strip() or "remat-run failed")
    with open(path) as f:
        return json.load(f)


def compile(model, example_inputs, loss="cross_entropy", memory_limit=None,
            solver="auto", target="cpu", optimizer=None, search_seconds=0,
            cache_dir=None, learning_rate=None, data_parallel=False,
            cost_model="flops", target_desc=None, cost_profile=None):
    """Captures `model` on `example_inputs` = (input, labels), builds its
    training step (forward, `loss`, backward, `optimizer`'s update: a
    remat.SGD, Adam or AdamW, SGD(lr=learning_rate or 0.01) when None)
    under `memory_limit` (bytes, "8GiB", "50%" of the peak without remat,
    or None for no limit) and returns the loaded Step, with the model's
    current parameters and fresh optimizer state. With `data_parallel`, the
    step is built in two parts, Step.backward (loss and gradients, under
    the limit) and Step.apply (the update), so that the caller can
    all-reduce the gradients in between. `cost_model` prices
    recomputation: "flops", "roofline" (time on the target, from the JSON
    description `target_desc` or the built-in one) or "profile" (the op
    times remat.profile wrote to `cost_profile`, which implies it)."""
    optimizer = _default_optimizer(optimizer, learning_rate)
    if cost_model not in ("flops", "roofline", "profile"):
        raise RematError("cost_model must be 'flops', 'roofline' or "
                         f"'profile', got {cost_model!r}")
    for name, file in (("target_desc", target_desc),
                       ("cost_profile", cost_profile)):
        if file is not None and not os.path.isfile(file):
            raise RematError(f"{name} {file!r} is not a file")
    if cost_model == "profile" and cost_profile is None:
        raise RematError("cost_model 'profile' needs cost_profile (a file "
                         "remat.profile wrote)")
    if target not in ("cpu", "cuda"):
        raise RematError(f"target must be 'cpu' or 'cuda', got {target!r}")
    if data_parallel and target != "cpu":
        raise RematError("data_parallel is implemented for target 'cpu'")
    text, exporter = _export(model, example_inputs, loss)
    compiler = pathlib.Path(_tool("remat-compile"))
    flags = _compile_flags(memory_limit, solver, target, optimizer,
                           search_seconds, cost_model, target_desc,
                           cost_profile)
    # name -> the flags of each library the step needs.
    parts = {"step": flags}
    if data_parallel:
        parts = {"step": flags + ["--mode=backward"],
                 "apply": _compile_flags(None, solver, target, optimizer, 0)
                 + ["--mode=apply"]}
    stat = compiler.stat()
    # A description's or profile's bytes, not its name, decide the schedule.
    inputs = [pathlib.Path(f).read_text() for f in (target_desc, cost_profile)
              if f is not None]
    key = hashlib.sha256("\n".join(
        [text, *[f for part in parts.values() for f in part], *inputs,
         str(compiler), str(stat.st_size),
         str(stat.st_mtime_ns)]).encode()).hexdigest()[:24]
    entry = _cache_dir(cache_dir) / key
    manifest = entry / "step.json"
    if not manifest.exists():
        entry.parent.mkdir(parents=True, exist_ok=True)
        # Build beside the entry and rename, so that a concurrent compile of
        # the same step (another rank) never sees half a cache entry.
        work = pathlib.Path(tempfile.mkdtemp(prefix=key + ".",
                                             dir=entry.parent))
        (work / "model.mlir").write_text(text)
        for name, part in parts.items():
            r = subprocess.run([str(compiler), str(work / "model.mlir"), "-o",
                                str(work / f"{name}.so"), *part],
                               capture_output=True, text=True)
            if r.returncode != 0:
                shutil.rmtree(work, ignore_errors=True)
                raise RematError(r.stderr.strip() or "remat-compile failed")
        try:
            os.rename(work, entry)
        except OSError:
            pass  # another process cached it first
    step = Step(str(manifest), optimizer,
                str(entry / "apply.json") if data_parallel else None)
    step._source = (entry / "model.mlir", parts["step"])
    step.load_state_dict(exporter.weights)
    return step


class _Library:
    """One compiled library loaded through the C API: its handle and its
    manifest's arguments and results."""

    def __init__(self, lib, manifest):
        error = ctypes.create_string_buffer(1024)
        handle = lib.remat_step_open(manifest.encode(), error, len(error))
        if not handle:
            raise RematError(error.value.decode())
        self.handle = handle
        with open(manifest) as f:
            self.manifest = json.load(f)
        self.args = self.manifest["arguments"]
        self.results = self.manifest["results"]

    def index(self, role):
        """name -> argument index, for the arguments of `role`."""
        return {a["name"]: i for i, a in enumerate(self.args)
                if a["role"] == role}


def _numel(shape):
    count = 1
    for d in shape:
        count *= d
    return count


def _tensor_at(address, spec):
    """A tensor over `spec`'s memory at `address`, without a copy."""
    dtype = _TORCH_DTYPES[spec["dtype"]]
    nbytes = _numel(spec["shape"]) * torch.empty((), dtype=dtype).element_size()
    raw = (ctypes.c_char * nbytes).from_address(address)
    if spec["dtype"] == "bf16":
        flat = torch.frombuffer(raw, dtype=torch.bfloat16)
    else:
        flat = torch.from_numpy(numpy.frombuffer(
            raw, dtype=_NUMPY_DTYPES[spec["dtype"]]))
    return flat.view(spec["shape"])


class Step:
    """A compiled training step loaded into this process: one library, or
    with data parallelism two (backward, apply) that share the parameters'
    buffers."""

    def __init__(self, manifest, optimizer=None, apply_manifest=None):
        self._lib = _load_runtime()
        self._main = _Library(self._lib, manifest)
        self._handle = self._main.handle
        self.manifest = self._main.manifest
        self._args = self._main.args
        self._apply = None
        self._batch = [i for i, a in enumerate(self._args)
                       if a["role"] in ("input", "label")
                       and a["name"] != "dropout.seed"]
        self._seed = next((i for i, a in enumerate(self._args)
                           if a["name"] == "dropout.seed"), None)
        self._params = self._main.index("param")
        # Where the optimizer's state lives: the step, or its apply part.
        self._state_lib = self._main
        if apply_manifest is not None:
            self._apply = _Library(self._lib, apply_manifest)
            self._state_lib = self._apply
            # The update writes the parameters in the backward part's
            # buffers.
            for name, j in self._apply.index("param").items():
                own = self._view(self._params[name])
                if self._lib.remat_step_bind_argument(
                        self._apply.handle, j, own.data_ptr(),
                        own.numel() * own.element_size(), None, 0):
                    raise RematError(f"cannot share parameter '{name}'")
        self._state = self._state_lib.index("state")
        # What the step reads as its learning rate at every call: changing
        # optimizer.lr changes the next step's.
        self.optimizer = optimizer
        self._cuda = self.manifest["target"] == "cuda"
        self._steps = 0
        self._measured_peak = 0
        self._last_ms = 0.0
        self.last_loss = None
        # Optimizer state starts at zero, as torch.optim's does.
        for i in self._state.values():
            self._view(i, self._state_lib).zero_()
        if self._cuda and self._state:
            self._lib.remat_step_upload(self._state_lib.handle)

    # Buffers -----------------------------------------------------------------
    def _check_open(self):
        if self._handle is None:
            raise RematError("the step was closed")

    def _view(self, index, library=None):
        """The library's own buffer of argument `index` as a torch tensor."""
        library = library or self._main
        address = self._lib.remat_step_argument(library.handle, index)
        return _tensor_at(address, library.args[index])

    def _buffers(self):
        """name -> (library, index) of every parameter and state buffer."""
        out = {name: (self._main, i) for name, i in self._params.items()}
        out.update({name: (self._state_lib, i)
                    for name, i in self._state.items()})
        return out

    def state_dict(self):
        """A copy of every parameter, by its name in the module, of the
        optimizer's state (`NAME.momentum_buffer`, `NAME.exp_avg`,
        `NAME.exp_avg_sq`, as torch.optim names it) and the step count
        (`step`, where the step has state)."""
        self._check_open()
        if self._cuda:
            self._lib.remat_step_download(self._handle)
        state = {name: self._view(i, lib).clone()
                 for name, (lib, i) in self._buffers().items()}
        if self._state:
            state["step"] = self._steps
        return state

    def load_state_dict(self, state):
        """Sets the parameters (every one must be given, with its shape)
        and, where given, the optimizer's state and step count (else they
        are kept)."""
        self._check_open()
        missing = sorted(set(self._params) - set(state))
        if missing:
            raise RematError(f"missing parameters: {', '.join(missing)}")
        buffers = self._buffers()
        unknown = sorted(set(state) - set(buffers) - {"step"})
        if unknown:
            raise RematError(f"the step has no parameter or optimizer state "
                             f"named {', '.join(unknown)}")
        if "step" in state:
            count = state["step"]
            if not isinstance(count, int) or count < 0:
                raise RematError(f"step must be a count >= 0, got {count!r}")
            self._steps = count
        for name, (lib, i) in buffers.items():
            if name not in state:
                continue
            value = torch.as_tensor(state[name])
            view = self._view(i, lib)
            if tuple(value.shape) != tuple(view.shape):
                raise RematError(f"parameter '{name}' has shape "
                                 f"{tuple(value.shape)}, the step "
                                 f"{tuple(view.shape)}")
            view.copy_(value.detach().to("cpu", view.dtype))
        if self._cuda:
            self._lib.remat_step_upload(self._handle)

    def copy_to(self, model):
        """Writes the trained parameters into `model`'s parameters."""
        state = {name: value for name, value in self.state_dict().items()
                 if name in self._params}
        params = dict(model.named_parameters())
        missing = sorted(set(state) - set(params))
        if missing:
            raise RematError("the module has no parameters named "
                             f"{', '.join(missing)}")
        with torch.no_grad():
            for name, value in state.items():
                params[name].copy_(value)

    # Steps -------------------------------------------------------------------
    def _bind(self, index, value, library=None):
        library = library or self._main
        a = library.args[index]
        what = f"{a['role']} '{a['name']}'"
        if isinstance(value, numpy.ndarray):
            value = torch.from_numpy(value)
        if not isinstance(value, torch.Tensor):
            raise RematError(f"{what}: expected a tensor or numpy array, got "
                             f"{type(value).__name__}")
        want = _TORCH_DTYPES[a["dtype"]]
        if value.dtype != want:
            raise RematError(f"{what}: expected dtype {want}, got "
                             f"{value.dtype}")
        if list(value.shape) != a["shape"]:
            raise RematError(f"{what}: expected shape {tuple(a['shape'])}, "
                             f"got {tuple(value.shape)}")
        device = "cuda" if self._cuda else "cpu"
        if value.device.type != device:
            raise RematError(f"{what}: expected a {device} tensor, got one on "
                             f"{value.device}")
        if not value.is_contiguous():
            raise RematError(f"{what}: the tensor is not contiguous (call "
                             ".contiguous() first)")
        if a.get("range") and value.numel() and (
                int(value.min()) < 0 or int(value.max()) >= a["range"]):
            raise RematError(f"{what}: values must lie in [0, {a['range']}), "
                             f"got [{int(value.min())}, {int(value.max())}]")
        error = ctypes.create_string_buffer(512)
        nbytes = value.numel() * value.element_size()
        if self._lib.remat_step_bind_argument(library.handle, index,
                                              value.data_ptr(), nbytes, error,
                                              len(error)):
            raise RematError(error.value.decode())
        return value

    def _run(self, library, batch, results):
        """Binds `batch` to `library`'s arguments (index -> tensor), sets the
        hyperparameters, runs, unbinds; returns the loss and, with
        `results`, copies of the results."""
        held = [self._bind(i, v, library) for i, v in batch.items()]
        lr = self.optimizer.lr if self.optimizer is not None else -1.0
        self._lib.remat_step_set_hyperparameters(library.handle,
                                                 self._steps + 1, lr)
        loss, ms = ctypes.c_double(), ctypes.c_double()
        error = ctypes.create_string_buffer(512)
        # The runtime counts the process's bytes: this step's peak is its
        # arguments plus what the run allocated above what was held before.
        self._lib.remat_step_reset_peak(library.handle)
        before = self._lib.remat_step_current_bytes(library.handle)
        copies = None
        if results:
            count = len(library.results)
            addresses = (ctypes.c_void_p * count)()
            failed = self._lib.remat_step_run_results(
                library.handle, ctypes.byref(loss), ctypes.byref(ms),
                addresses, count, error, len(error))
            if not failed:
                copies = [_tensor_at(addresses[k], spec).clone()
                          for k, spec in enumerate(library.results)]
                self._lib.remat_step_release_results(library.handle)
        else:
            failed = self._lib.remat_step_run(library.handle,
                                              ctypes.byref(loss),
                                              ctypes.byref(ms), error,
                                              len(error))
        for i in batch:  # the library's own buffers again
            self._lib.remat_step_bind_argument(library.handle, i, None, 0,
                                               None, 0)
        del held
        if failed:
            raise RematError(error.value.decode())
        if library is self._main:
            peak = self._lib.remat_step_peak_bytes(library.handle) - before + \
                self.manifest["fixed_bytes"]
            self._measured_peak = max(self._measured_peak, peak)
            self._last_ms = ms.value
            self.last_loss = loss.value
        return loss.value, copies

    def _batch_of(self, batch):
        self._check_open()
        if len(batch) != len(self._batch):
            raise RematError(f"the step takes {len(self._batch)} tensors "
                             f"(input, labels), got {len(batch)}")
        if self._seed is not None:
            self._view(self._seed).fill_(self._steps)
            if self._cuda:
                self._lib.remat_step_upload(self._handle)
        return dict(zip(self._batch, batch))

    def __call__(self, *batch):
        """One training step on `batch` = (input, labels); returns the loss.
        The tensors are read in place (no copy): contiguous, with the
        example's shape and dtype, on the step's device."""
        if self._apply is not None:
            grads = self.backward(*batch)
            self.apply(grads)
            return self.last_loss
        loss, _ = self._run(self._main, self._batch_of(batch), False)
        self._steps += 1
        return loss

    def backward(self, *batch):
        """The gradients of the loss on `batch` (data_parallel steps), as
        {parameter name: a new tensor}, to all-reduce and pass to apply();
        the loss is in `last_loss`. Updates nothing."""
        self._require_parts("backward")
        _, results = self._run(self._main, self._batch_of(batch), True)
        names = list(self._params)
        return {names[spec["param"]]: value
                for spec, value in zip(self._main.results, results)
                if spec["role"] == "grad"}

    def apply(self, grads):
        """The optimizer's update from `grads` ({parameter name: tensor},
        every parameter, or a sequence in the parameters' order), read in
        place; advances the step count."""
        self._require_parts("apply")
        names = list(self._params)
        if not isinstance(grads, dict):
            grads = list(grads)
            if len(grads) != len(names):
                raise RematError(f"apply takes {len(names)} gradients, got "
                                 f"{len(grads)}")
            grads = dict(zip(names, grads))
        missing = sorted(set(names) - set(grads))
        unknown = sorted(set(grads) - set(names))
        if missing or unknown:
            raise RematError("apply needs one gradient per parameter"
                             + (f"; missing {', '.join(missing)}"
                                if missing else "")
                             + (f"; no parameter named {', '.join(unknown)}"
                                if unknown else ""))
        slots = self._apply.index("grad")
        self._run(self._apply, {slots[name + ".grad"]: grads[name]
                                for name in names}, False)
        self._steps += 1

    def plot_memory(self, path):
        """Draws the plan (live bytes over the step without remat and under
        the limit, the limit, the fixed part, the recomputed ops, the step's
        peak with its arena) to `path`, a PNG; returns the peaks drawn. What
        PyTorch's memory snapshot shows after a run, before it."""
        from . import _plot
        source = getattr(self, "_source", None)
        if source is None:
            raise RematError("plot_memory needs a step made by "
                             "remat.compile")
        mlir, flags = source
        planned = ("--memory-limit", "--solver", "--search-seconds")
        base = [f for f in flags if not f.startswith(planned)]
        m = self.manifest
        # The convolutions the step runs (a limit oneDNN's workspace left
        # no schedule for falls back to the runtime's kernels).
        if m["target"] == "cpu" and not m.get("conv_layout"):
            base.append("--cpu-conv-library=false")
        extra = [f for f in flags if f.startswith("--search-seconds")]
        return _plot.plot(mlir, base, m.get("memory_limit_bytes"),
                          (m.get("solver") or "auto"), path,
                          solve_flags=extra,
                          arena=m["predicted_peak_bytes"]
                          if m.get("arena_bytes") else None)

    def _require_parts(self, what):
        self._check_open()
        if self._apply is None:
            raise RematError(f"{what}() needs a step compiled with "
                             "data_parallel=True")

    def report(self):
        """What the plan predicted and the runs measured."""
        m = self.manifest
        state = m.get("state_bytes", 0)
        if self._apply is not None:
            state = self._apply.manifest.get("state_bytes", 0)
        return Report(solver=m.get("solver"),
                      memory_limit_bytes=m.get("memory_limit_bytes"),
                      predicted_peak_bytes=m["predicted_peak_bytes"],
                      measured_peak_bytes=self._measured_peak or None,
                      fixed_bytes=m["fixed_bytes"],
                      optimizer_state_bytes=state,
                      predicted_overhead=m["predicted_cost_flops"]
                      / max(m["baseline_cost_flops"], 1.0),
                      cost_model=m.get("cost_model", "flops"),
                      predicted_step_ms=m.get("predicted_step_ms"),
                      steps=self._steps, last_step_ms=self._last_ms,
                      max_rss_bytes=resource.getrusage(
                          resource.RUSAGE_SELF).ru_maxrss * 1024)

    def close(self):
        """Unloads the step's buffers; later calls raise RematError."""
        if self._apply is not None:
            self._lib.remat_step_close(self._apply.handle)
            self._apply = None
        if self._handle is not None:
            self._lib.remat_step_close(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Report(dict):
    """remat's plan and measurement of a step, as a dict with a summary."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __str__(self):
        def size(b):
            if b is None:
                return "none"
            return f"{b} bytes" + (f" ({b / 1048576:.1f} MiB)"
                                   if b >= 1048576 else "")
        measured = self["measured_peak_bytes"]
        return (f"solver {self['solver']}, limit "
                f"{size(self['memory_limit_bytes'])}: predicted peak "
                f"{size(self['predicted_peak_bytes'])}, measured "
                f"{'(no step run)' if measured is None else size(measured)}, "
                f"fixed {size(self['fixed_bytes'])}; extra compute "
                f"{self['predicted_overhead']:.3f}x; {self['steps']} steps; "
                f"process max RSS {size(self['max_rss_bytes'])}" +
                ("" if self.get("predicted_step_ms") is None else
                 f"; predicted step {self['predicted_step_ms']:.3f} ms "
                 f"({self['cost_model']}), last step "
                 f"{self['last_step_ms'] or 0:.3f} ms"))
