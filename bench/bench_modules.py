"""The benches whose file names have a dash, loaded as modules: the solver
sweep (its graph picking, remat-solve runs and bound envelope) and the
PyTorch side-by-side bench (its models, data and measures), shared by the
benches built on them."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name, script):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "bench", script))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def solver_sweep():
    return _load("solver_sweep", "solver-sweep.py")


def side_by_side():
    return _load("side_by_side", "torch-side-by-side.py")
