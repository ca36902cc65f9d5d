"""Step.plot_memory and `python3 -m remat plot-memory`: the peaks drawn are
the plan's (the compiler's predicted peak with and without remat), the PNG
is written, recomputations are marked, and bad limits raise RematError.
Run by plot.test with PYTHONPATH=python, REMAT_BUILD and REMAT_CACHE."""

import pathlib
import subprocess
import sys

import pytest
import torch

import remat
from remat import _plot

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cnn():
    torch.manual_seed(0)
    body = []
    for channels in (1, 8, 8):
        body += [torch.nn.Conv2d(channels, 8, 3, padding=1), torch.nn.ReLU()]
    return torch.nn.Sequential(*body, torch.nn.Flatten(),
                               torch.nn.Linear(8 * 8 * 8, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 3))


def example():
    g = torch.Generator().manual_seed(0)
    return torch.randn(32, 1, 8, 8, generator=g), torch.randint(0, 3, (32,),
                                                                generator=g)


def test_plot_memory_draws_the_plan(tmp_path):
    plain = remat.compile(cnn(), example(), optimizer=remat.Adam())
    limited = remat.compile(cnn(), example(), optimizer=remat.Adam(),
                            memory_limit="75%")
    out = tmp_path / "mem.png"
    peaks = limited.plot_memory(str(out))
    assert out.stat().st_size > 0
    # The solver's live bytes are the arena's live peak over the fixed part;
    # the arena adds its fragmentation, and that peak meets the limit.
    for step, name in ((limited, "with remat"), (plain, "without remat")):
        m = step.manifest
        assert peaks[name] == m["fixed_bytes"] + m["arena_live_bytes"]
    assert peaks["arena"] == limited.report()["predicted_peak_bytes"]
    assert peaks["with remat"] <= peaks["arena"]
    assert peaks["arena"] <= limited.report()["memory_limit_bytes"]
    # Without a limit only the one schedule is drawn, beside its arena.
    assert set(plain.plot_memory(str(tmp_path / "plain.png"))) == {
        "without remat", "arena"}


def test_timeline_marks_recomputations():
    graph = {"nodes": [
        {"id": 0, "cost_ram": 10, "argument": True},
        {"id": 1, "cost_ram": 4},
        {"id": 2, "cost_ram": 6, "workspace": 5},
        {"id": 3, "cost_ram": 10, "overwrites": 0}]}
    events = [["compute", 1], ["compute", 2], ["free", 1], ["compute", 1],
              ["free", 2], ["compute", 3]]
    points, fixed = _plot.timeline(graph, events)
    assert fixed == 10
    assert points == [(14, False), (25, False), (20, True), (14, False)]


def test_command_line(tmp_path):
    env = {"PYTHONPATH": str(ROOT / "python")}
    import os
    env = {**os.environ, **env}
    out = tmp_path / "r.png"
    r = subprocess.run([sys.executable, "-m", "remat", "plot-memory",
                        str(ROOT / "examples" / "mlp.mlir"), "--memory-limit",
                        "50%", "-o", str(out)], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    peak = int(r.stdout.split("with remat: peak ")[1].split()[0])
    build = os.environ.get("REMAT_BUILD", str(ROOT / "build"))
    c = subprocess.run([f"{build}/bin/remat-compile",
                        str(ROOT / "examples" / "mlp.mlir"), "--emit=step",
                        "--memory-limit=50%", "-o", os.devnull],
                       capture_output=True, text=True)
    assert f"peak {peak} bytes" in c.stderr
    assert out.stat().st_size > 0
    r = subprocess.run([sys.executable, "-m", "remat", "plot-memory",
                        str(ROOT / "examples" / "mlp.mlir"), "--memory-limit",
                        "1%", "-o", str(out)], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 1
    assert "no schedule of the 'auto' solver fits the limit (0.01x)" in r.stderr


def test_plot_memory_needs_a_compiled_step(tmp_path):
    step = remat.compile(cnn(), example())
    step._source = None
    with pytest.raises(remat.RematError, match="made by remat.compile"):
        step.plot_memory(str(tmp_path / "x.png"))
