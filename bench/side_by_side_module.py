"""bench/torch-side-by-side.py loaded as a module (its file name has a
dash): its models, data and measures, shared by the benches built on it."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def side_by_side():
    spec = importlib.util.spec_from_file_location(
        "side_by_side", os.path.join(ROOT, "bench", "torch-side-by-side.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
