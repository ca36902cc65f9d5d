"""The Python API (python/remat): a step trained from a Python loop matches
torch.optim's, remat changes no bit, the memory measured in this process is
the plan's, and every bad input raises RematError. Run by api.test with
PYTHONPATH=python, REMAT_BUILD and REMAT_CACHE set."""

import pytest
import torch

import remat
from models import batch, small_cnn


def torch_sgd(model, batches, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def steps():
    model = small_cnn()
    example = batch(0)
    none = remat.compile(model, example, learning_rate=0.05)
    half = remat.compile(model, example, learning_rate=0.05,
                         memory_limit="85%")
    yield model, none, half
    none.close()
    half.close()


def test_matches_torch_and_remat_changes_no_bit(steps):
    model, none, half = steps
    batches = [batch(s) for s in range(1, 6)]
    reference = small_cnn()
    expected = torch_sgd(reference, batches, 0.05)
    start = none.state_dict()
    got = [none(x, y) for x, y in batches]
    half.load_state_dict(start)
    got_half = [half(x, y) for x, y in batches]
    assert got == pytest.approx(expected, rel=1e-10)
    assert got_half == got  # bitwise
    trained = small_cnn()
    none.copy_to(trained)
    for (name, p), q in zip(trained.named_parameters(),
                            reference.parameters()):
        assert torch.allclose(p, q, rtol=1e-10, atol=0), name
    for name, value in half.state_dict().items():
        assert torch.equal(value, none.state_dict()[name]), name
    assert half.report()["predicted_peak_bytes"] < \
        none.report()["predicted_peak_bytes"]
    for step in (none, half):
        r = step.report()
        assert r["measured_peak_bytes"] == r["predicted_peak_bytes"], str(r)


def test_numpy_batches_and_state_round_trip(steps):
    _, none, _ = steps
    x, y = batch(7)
    saved = none.state_dict()
    a = none(x.numpy(), y.numpy())
    none.load_state_dict(saved)
    b = none(x, y)
    assert a == b


def test_compiles_once_per_content(tmp_path, steps):
    model, none, _ = steps
    again = remat.compile(model, batch(0), learning_rate=0.05)
    assert again.manifest == none.manifest
    again.close()


@pytest.mark.parametrize("args, message", [
    (lambda x, y: (x,), "the step takes 2 tensors (input, labels), got 1"),
    (lambda x, y: (x[:4], y), "input 'x': expected shape (32, 1, 8, 8)"),
    (lambda x, y: (x.float(), y), "input 'x': expected dtype torch.float64"),
    (lambda x, y: (x.transpose(2, 3), y), "is not contiguous"),
    (lambda x, y: (x, y + 5), "label 'y': values must lie in [0, 3)"),
    (lambda x, y: (x.tolist(), y), "expected a tensor or numpy array"),
])
def test_bad_batches(steps, args, message):
    _, none, _ = steps
    x, y = batch(1)
    with pytest.raises(remat.RematError, match=_literal(message)):
        none(*args(x, y))


def test_bad_state_and_module(steps):
    _, none, _ = steps
    with pytest.raises(remat.RematError, match="missing parameters"):
        none.load_state_dict({})
    state = none.state_dict()
    state["0.weight"] = torch.zeros(2, 2)
    with pytest.raises(remat.RematError, match="parameter '0.weight' has shape"):
        none.load_state_dict(state)
    with pytest.raises(remat.RematError, match="the module has no parameters"):
        none.copy_to(torch.nn.Linear(2, 2))


def test_closed_step():
    model = small_cnn()
    step = remat.compile(model, batch(0))
    step.close()
    with pytest.raises(remat.RematError, match="the step was closed"):
        step(*batch(1))


def test_limit_below_reach_names_the_smallest():
    with pytest.raises(remat.RematError,
                       match="cannot be met: the smallest peak the 'auto' "
                       "solver reaches is [0-9]+ bytes"):
        remat.compile(small_cnn(), batch(0), memory_limit=1000)


def test_roofline_predicts_the_step_time(tmp_path):
    desc = tmp_path / "target.json"
    desc.write_text('{"name": "slow", "contraction_gflops": 1, '
                    '"loop_gflops": 0.5, "bandwidth_gbs": 1, '
                    '"op_overhead_us": 10}')
    step = remat.compile(small_cnn(), batch(0), memory_limit="80%",
                         cost_model="roofline", target_desc=str(desc))
    step(*batch(1))
    report = step.report()
    assert report.cost_model == "roofline"
    assert report.predicted_step_ms > 0
    assert "(roofline)" in str(report)
    plain = remat.compile(small_cnn(), batch(0)).report()
    assert plain.cost_model == "flops" and plain.predicted_step_ms is None


def test_profile_prices_by_measured_time(tmp_path):
    path = tmp_path / "cnn.profile.json"
    prof = remat.profile(small_cnn(), batch(0), str(path), steps=2)
    assert prof["format"] == "remat-profile/1" and prof["steps"] == 2
    assert prof["ops"] and all(op["ns"] >= 0 for op in prof["ops"])
    # Every op of the step ran, and the timers account for most of it.
    assert 0 < prof["timed_ms"] <= prof["step_ms"] * 1.5
    step = remat.compile(small_cnn(), batch(0), memory_limit="80%",
                         cost_profile=str(path))
    step(*batch(1))
    report = step.report()
    assert report.cost_model == "profile"
    assert report.predicted_step_ms > 0
    assert "(profile)" in str(report)


class Detached(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x).detach() * 2


@pytest.mark.parametrize("call, message", [
    (lambda: remat.compile(Detached().double(),
                           (torch.randn(2, 4, dtype=torch.float64),
                            torch.zeros(2, dtype=torch.int64))),
     "') does not affect the loss"),
    (lambda: remat.compile(small_cnn(), batch(0), loss="hinge"),
     "loss must be 'cross_entropy' or 'mse'"),
    (lambda: remat.compile(small_cnn(), batch(0), target="tpu"),
     "target must be 'cpu' or 'cuda'"),
    (lambda: remat.compile(small_cnn(), (batch(0)[0],)),
     "example_inputs must be (input, labels)"),
    (lambda: remat.compile(small_cnn(), batch(0), cost_model="time"),
     "cost_model must be 'flops', 'roofline' or 'profile', got 'time'"),
    (lambda: remat.compile(small_cnn(), batch(0), cost_model="profile"),
     "cost_model 'profile' needs cost_profile"),
    (lambda: remat.compile(small_cnn(), batch(0),
                           cost_profile="/nonexistent/p.json"),
     "cost_profile '/nonexistent/p.json' is not a file"),
    (lambda: remat.compile(small_cnn(), batch(0), target="cuda",
                           cost_profile=__file__),
     "not JSON"),
    (lambda: remat.profile(small_cnn(), batch(0), "/tmp/p.json", steps=0),
     "steps must be a positive integer, got 0"),
    (lambda: remat.compile(small_cnn(), batch(0), cost_model="roofline",
                           target_desc="/nonexistent/target.json"),
     "target_desc '/nonexistent/target.json' is not a file"),
])
def test_bad_compiles(call, message):
    with pytest.raises(remat.RematError, match=_literal(message)):
        call()


def _literal(text):
    import re
    return re.escape(text)
