"""remat.compile and the in-process Step (see the package's docstring)."""

import ctypes
import hashlib
import json
import os
import pathlib
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
    lib.remat_step_download.argtypes = [c.c_void_p]
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


def _compile_flags(memory_limit, solver, target, learning_rate,
                   search_seconds):
    flags = [f"--target={target}", f"--learning-rate={learning_rate!r}"]
    if memory_limit is not None:
        if isinstance(memory_limit, (int, float)) and not isinstance(
                memory_limit, bool):
            memory_limit = str(int(memory_limit))
        flags += [f"--memory-limit={memory_limit}", f"--solver={solver}"]
        if search_seconds:
            flags.append(f"--search-seconds={search_seconds!r}")
    return flags


def compile(model, example_inputs, loss="cross_entropy", memory_limit=None,
            solver="auto", target="cpu", learning_rate=0.01, search_seconds=0,
            cache_dir=None):
    """Captures `model` on `example_inputs` = (input, labels), builds its
    training step (forward, `loss`, backward, SGD at `learning_rate`) under
    `memory_limit` (bytes, "8GiB", "50%" of the peak without remat, or None
    for no limit) and returns the loaded Step, with the model's current
    parameters."""
    if loss not in ("cross_entropy", "mse"):
        raise RematError(f"loss must be 'cross_entropy' or 'mse', got {loss!r}")
    if target not in ("cpu", "cuda"):
        raise RematError(f"target must be 'cpu' or 'cuda', got {target!r}")
    if not isinstance(example_inputs, (tuple, list)) or \
            len(example_inputs) != 2:
        raise RematError("example_inputs must be (input, labels)")
    x, y = (torch.as_tensor(t) for t in example_inputs)
    exporter = remat_export.Exporter(model, x.cpu(), loss, "model")
    try:
        text = exporter.export()
    except remat_export.ExportError as e:
        raise RematError(str(e)) from None
    compiler = _build_dir() / "bin" / "remat-compile"
    if not compiler.exists():
        raise RematError(f"{compiler} does not exist: build Remat first "
                         "(./utils/build.sh) or set REMAT_BUILD")
    flags = _compile_flags(memory_limit, solver, target, learning_rate,
                           search_seconds)
    stat = compiler.stat()
    key = hashlib.sha256("\n".join(
        [text, *flags, str(compiler), str(stat.st_size),
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
        r = subprocess.run([str(compiler), str(work / "model.mlir"), "-o",
                            str(work / "step.so"), *flags],
                           capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            raise RematError(r.stderr.strip() or "remat-compile failed")
        try:
            os.rename(work, entry)
        except OSError:
            pass  # another process cached it first
    step = Step(str(manifest))
    step.load_state_dict(exporter.weights)
    return step


class Step:
    """A compiled training step loaded into this process."""

    def __init__(self, manifest):
        self._lib = _load_runtime()
        error = ctypes.create_string_buffer(1024)
        handle = self._lib.remat_step_open(manifest.encode(), error,
                                           len(error))
        if not handle:
            raise RematError(error.value.decode())
        self._handle = handle
        with open(manifest) as f:
            self.manifest = json.load(f)
        self._args = self.manifest["arguments"]
        self._batch = [i for i, a in enumerate(self._args)
                       if a["role"] in ("input", "label")
                       and a["name"] != "dropout.seed"]
        self._seed = next((i for i, a in enumerate(self._args)
                           if a["name"] == "dropout.seed"), None)
        self._params = {a["name"]: i for i, a in enumerate(self._args)
                        if a["role"] == "param"}
        self._cuda = self.manifest["target"] == "cuda"
        self._steps = 0
        self._measured_peak = 0
        self._last_ms = 0.0

    # Buffers -----------------------------------------------------------------
    def _check_open(self):
        if self._handle is None:
            raise RematError("the step was closed")

    def _view(self, index):
        """The step's own buffer of argument `index` as a torch tensor."""
        a = self._args[index]
        dtype = _TORCH_DTYPES[a["dtype"]]
        count = 1
        for d in a["shape"]:
            count *= d
        nbytes = count * torch.empty((), dtype=dtype).element_size()
        address = self._lib.remat_step_argument(self._handle, index)
        raw = (ctypes.c_char * nbytes).from_address(address)
        if a["dtype"] == "bf16":
            flat = torch.frombuffer(raw, dtype=torch.bfloat16)
        else:
            flat = torch.from_numpy(numpy.frombuffer(
                raw, dtype=_NUMPY_DTYPES[a["dtype"]]))
        return flat.view(a["shape"])

    def state_dict(self):
        """A copy of every parameter, by its name in the module."""
        self._check_open()
        if self._cuda:
            self._lib.remat_step_download(self._handle)
        return {name: self._view(i).clone() for name, i in self._params.items()}

    def load_state_dict(self, state):
        """Sets the parameters (every one must be given, with its shape)."""
        self._check_open()
        missing = sorted(set(self._params) - set(state))
        if missing:
            raise RematError(f"missing parameters: {', '.join(missing)}")
        for name, i in self._params.items():
            value = torch.as_tensor(state[name])
            view = self._view(i)
            if tuple(value.shape) != tuple(view.shape):
                raise RematError(f"parameter '{name}' has shape "
                                 f"{tuple(value.shape)}, the step "
                                 f"{tuple(view.shape)}")
            view.copy_(value.detach().to("cpu", view.dtype))
        if self._cuda:
            self._lib.remat_step_upload(self._handle)

    def copy_to(self, model):
        """Writes the trained parameters into `model`'s parameters."""
        state = self.state_dict()
        params = dict(model.named_parameters())
        missing = sorted(set(state) - set(params))
        if missing:
            raise RematError("the module has no parameters named "
                             f"{', '.join(missing)}")
        with torch.no_grad():
            for name, value in state.items():
                params[name].copy_(value)

    # Steps -------------------------------------------------------------------
    def _bind(self, index, value):
        a = self._args[index]
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
        if self._lib.remat_step_bind_argument(self._handle, index,
                                              value.data_ptr(), nbytes, error,
                                              len(error)):
            raise RematError(error.value.decode())
        return value

    def __call__(self, *batch):
        """One training step on `batch` = (input, labels); returns the loss.
        The tensors are read in place (no copy): contiguous, with the
        example's shape and dtype, on the step's device."""
        self._check_open()
        if len(batch) != len(self._batch):
            raise RematError(f"the step takes {len(self._batch)} tensors "
                             f"(input, labels), got {len(batch)}")
        held = [self._bind(i, v) for i, v in zip(self._batch, batch)]
        if self._seed is not None:
            seed = self._view(self._seed)
            seed.fill_(self._steps)
            if self._cuda:
                self._lib.remat_step_upload(self._handle)
        loss, ms = ctypes.c_double(), ctypes.c_double()
        error = ctypes.create_string_buffer(512)
        # The runtime counts the process's bytes: this step's peak is its
        # arguments plus what the run allocated above what was held before.
        self._lib.remat_step_reset_peak(self._handle)
        before = self._lib.remat_step_current_bytes(self._handle)
        if self._lib.remat_step_run(self._handle, ctypes.byref(loss),
                                    ctypes.byref(ms), error, len(error)):
            raise RematError(error.value.decode())
        peak = self._lib.remat_step_peak_bytes(self._handle) - before + \
            self.manifest["fixed_bytes"]
        self._measured_peak = max(self._measured_peak, peak)
        for i in self._batch:  # the step's own buffers again
            self._lib.remat_step_bind_argument(self._handle, i, None, 0, None, 0)
        del held
        self._steps += 1
        self._last_ms = ms.value
        return loss.value

    def report(self):
        """What the plan predicted and the runs measured."""
        m = self.manifest
        return Report(solver=m.get("solver"),
                      memory_limit_bytes=m.get("memory_limit_bytes"),
                      predicted_peak_bytes=m["predicted_peak_bytes"],
                      measured_peak_bytes=self._measured_peak or None,
                      fixed_bytes=m["fixed_bytes"],
                      predicted_overhead=m["predicted_cost_flops"]
                      / max(m["baseline_cost_flops"], 1.0),
                      steps=self._steps, last_step_ms=self._last_ms)

    def close(self):
        """Unloads the step's buffers; later calls raise RematError."""
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
                f"{self['predicted_overhead']:.3f}x; {self['steps']} steps")
