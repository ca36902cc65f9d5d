"""bench/solver-sweep.py loaded as a module (its file name has a dash): its
graph picking, remat-solve runs and bound envelope, shared by the solver
benches built on it."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def solver_sweep():
    spec = importlib.util.spec_from_file_location(
        "solver_sweep", os.path.join(ROOT, "bench", "solver-sweep.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
