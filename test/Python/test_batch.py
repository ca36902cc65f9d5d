"""remat.max_batch and `python3 -m remat max-batch`: the batch found fits by
the compiler's own plan at that batch and the next does not; the graph
extrapolated from batches 2 to 4 is the one exported at the batch found;
remat finds a larger batch than none; bad input raises RematError. Run by
batch.test with PYTHONPATH=python and REMAT_BUILD set."""

import pathlib
import subprocess
import sys
import tempfile

import pytest
import torch

import remat
from remat import _batch

MEMORY = 3 << 20  # 3 MiB


def small_cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(4 * 4 * 4, 16), torch.nn.ReLU(),
        torch.nn.Linear(16, 3))


def shape(b):
    return (b, 1, 8, 8)


def compiles_within(batch, memory, solver, work):
    """The compiler's own plan at `batch`: remat-compile under the limit."""
    model = small_cnn()
    g = _batch._graph_at_batch(model, shape, batch, "cross_entropy",
                               torch.float32, work)
    mlir = work / f"b{batch}.mlir"
    args = [_batch._tool("remat-compile"), str(mlir), "--emit=step",
            "-o", str(work / "step.mlir")]
    if solver != "none":
        args += [f"--memory-limit={memory}", f"--solver={solver}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if solver == "none":
        # Without remat the plan's peak is the graph's no-remat peak.
        return _batch._fits(g, memory, "none", work), g
    return r.returncode == 0, g


@pytest.fixture(scope="module")
def found():
    return remat.max_batch(small_cnn, shape, MEMORY,
                           solvers=("none", "chen-greedy", "auto"))


@pytest.mark.parametrize("solver", ["none", "auto"])
def test_fits_and_the_next_batch_does_not(found, solver):
    b = found[solver]
    assert b > 1
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        fits, g = compiles_within(b, MEMORY, solver, work)
        assert fits
        assert not compiles_within(b + 1, MEMORY, solver, work)[0]
        # The extrapolated graph is the exported one, but for library
        # workspaces (checked on exported graphs by max_batch itself).
        model = small_cnn()
        graphs = [_batch._graph_at_batch(model, shape, k, "cross_entropy",
                                         torch.float32, work)
                  for k in (2, 3, 4)]

        def sizes(graph):
            return [{k: v for k, v in n.items() if k != "workspace"}
                    for n in graph["nodes"]]
        assert sizes(_batch.AffineGraph(*graphs).at(b)) == sizes(g)


def test_remat_fits_a_larger_batch(found):
    assert found["auto"] > found["none"]
    assert found["auto"] >= found["chen-greedy"]


def test_bad_memory_and_solver():
    with pytest.raises(remat.RematError, match="not a size"):
        remat.max_batch(small_cnn, shape, "lots")
    with pytest.raises(remat.RematError, match="must be positive"):
        remat.max_batch(small_cnn, shape, 0)
    with pytest.raises(remat.RematError, match="unknown solver"):
        remat.max_batch(small_cnn, shape, "1GiB", solvers=("fastest",))
    with pytest.raises(remat.RematError, match="tensor or a shape"):
        remat.max_batch(small_cnn, lambda b: "wide", "1GiB")


class Gram(torch.nn.Module):
    """x x^T: a batch x batch value, quadratic in the batch."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return (h @ h.t()) @ h


def test_memory_not_affine_in_the_batch():
    with pytest.raises(remat.RematError, match="not affine in the batch"):
        remat.max_batch(Gram, lambda b: (b, 4), "1GiB")


def test_batch_nothing_fits():
    assert remat.max_batch(small_cnn, shape, 1000,
                           solvers=("none",)) == {"none": 0}


def test_command_line():
    r = subprocess.run([sys.executable, "-m", "remat", "max-batch", "mlp",
                        "--input-shape", "32", "--memory", "1MiB",
                        "--solvers", "none,auto"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = r.stdout.strip().splitlines()[-1].split("|")
    assert row[1].strip() == "1MiB"
    none, auto = int(row[2]), int(row[3])
    assert 0 < none < auto
    r = subprocess.run([sys.executable, "-m", "remat", "max-batch", "mlp",
                        "--input-shape", "32", "--memory", "big"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "remat max-batch: error: memory 'big' is not a size" in r.stderr
