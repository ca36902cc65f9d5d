"""Optimizers in the step (remat.SGD with momentum, dampening, Nesterov and
weight decay; remat.Adam; remat.AdamW): parameters after 5 steps match
torch.optim's in float64 to 1e-10, with and without remat (bitwise equal),
a learning-rate schedule needs no recompile, optimizer state is fixed memory
and round-trips through state_dict, and bad optimizers raise RematError.
Run by optim.test with PYTHONPATH=python, REMAT_BUILD and REMAT_CACHE."""

import re

import pytest
import torch

import remat
from models import batch, small_cnn


CASES = {
    "sgd-momentum": (lambda: remat.SGD(lr=0.05, momentum=0.9, dampening=0.1,
                                       weight_decay=0.01),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                               dampening=0.1,
                                               weight_decay=0.01)),
    "sgd-nesterov": (lambda: remat.SGD(lr=0.05, momentum=0.8, nesterov=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8,
                                               nesterov=True)),
    "adam": (lambda: remat.Adam(lr=1e-2, betas=(0.8, 0.99), eps=1e-6,
                                weight_decay=0.01),
             lambda p: torch.optim.Adam(p, lr=1e-2, betas=(0.8, 0.99),
                                        eps=1e-6, weight_decay=0.01)),
    "adamw": (lambda: remat.AdamW(lr=1e-2, weight_decay=0.05),
              lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05)),
}


def train_torch(make_optimizer, batches, lrs=None):
    model = small_cnn()
    opt = make_optimizer(model.parameters())
    for k, (x, y) in enumerate(batches):
        if lrs:
            for group in opt.param_groups:
                group["lr"] = lrs[k]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return dict(model.named_parameters())


def close(state, params):
    for name, p in params.items():
        err = (state[name] - p.detach()).abs().max() / p.abs().max()
        assert err < 1e-10, f"{name}: {float(err)}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_optim_with_and_without_remat(case):
    make, make_torch = CASES[case]
    batches = [batch(s) for s in range(1, 6)]
    none = remat.compile(small_cnn(), batch(0), optimizer=make())
    half = remat.compile(small_cnn(), batch(0), optimizer=make(),
                         memory_limit="85%")
    assert half.report()["predicted_overhead"] > 1.0  # something recomputed
    losses = [none(x, y) for x, y in batches]
    losses_half = [half(x, y) for x, y in batches]
    assert losses == losses_half
    a, b = none.state_dict(), half.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        if name != "step":
            assert torch.equal(a[name], b[name]), name
    close(a, train_torch(make_torch, batches))
    # The state is fixed memory: counted in the plan and measured.
    state = sum(v.numel() * 8 for k, v in a.items()
                if k != "step" and k not in dict(small_cnn().named_parameters()))
    report = half.report()
    assert report["optimizer_state_bytes"] == state > 0
    assert report["measured_peak_bytes"] == report["predicted_peak_bytes"]
    none.close()
    half.close()


def test_learning_rate_schedule_without_recompile(tmp_path):
    make, make_torch = CASES["adamw"]
    step = remat.compile(small_cnn(), batch(0), optimizer=make(),
                         cache_dir=tmp_path)
    entries = set(tmp_path.iterdir())
    batches = [batch(s) for s in range(1, 6)]
    lrs = [1e-2, 5e-3, 2.5e-3, 1e-3, 1e-4]
    for lr, (x, y) in zip(lrs, batches):
        step.optimizer.lr = lr
        step(x, y)
    expected = train_torch(make_torch, batches, lrs)
    close(step.state_dict(), expected)
    assert set(tmp_path.iterdir()) == entries
    model = small_cnn()
    step.copy_to(model)  # parameters only; the state stays in the step
    close(dict(model.named_parameters()), expected)


def test_state_dict_round_trip_continues_training():
    make, _ = CASES["sgd-momentum"]
    batches = [batch(s) for s in range(1, 5)]
    straight = remat.compile(small_cnn(), batch(0), optimizer=make())
    for x, y in batches:
        straight(x, y)
    first = remat.compile(small_cnn(), batch(0), optimizer=make())
    for x, y in batches[:2]:
        first(x, y)
    saved = first.state_dict()
    assert saved["step"] == 2
    assert "0.weight.momentum_buffer" in saved
    second = remat.compile(small_cnn(), batch(0), optimizer=make())
    second.load_state_dict(saved)
    for x, y in batches[2:]:
        second(x, y)
    a, b = straight.state_dict(), second.state_dict()
    for name in a:
        assert torch.equal(torch.as_tensor(a[name]), torch.as_tensor(b[name]))


@pytest.mark.parametrize("call, message", [
    (lambda: remat.SGD(lr=-1), "SGD: lr must be a finite number >= 0"),
    (lambda: remat.SGD(lr=0.1, nesterov=True),
     "SGD: Nesterov momentum needs a momentum and zero dampening"),
    (lambda: remat.AdamW(eps=float("nan")), "AdamW: eps must be a finite"),
    (lambda: remat.SGD(weight_decay=-1), "SGD: weight_decay must be in [0, inf], got -1"),
    (lambda: remat.SGD(momentum=0.9, dampening=1.5),
     "SGD: dampening must be in [0, 1], got 1.5"),
    (lambda: remat.Adam(betas=(0.9, 1.0)), "Adam: beta2 must be in [0, 1), got 1.0"),
    (lambda: remat.compile(small_cnn(), batch(0),
                           optimizer=torch.optim.SGD),
     "optimizer must be remat.SGD, remat.Adam or remat.AdamW"),
    (lambda: remat.compile(small_cnn(), batch(0), optimizer=remat.SGD(),
                           learning_rate=0.1),
     "give the learning rate to the optimizer, not both"),
])
def test_bad_optimizers(call, message):
    with pytest.raises(remat.RematError, match=re.escape(message)):
        call()


def test_bad_optimizer_state():
    step = remat.compile(small_cnn(), batch(0), optimizer=CASES["adam"][0]())
    state = step.state_dict()
    with pytest.raises(remat.RematError, match="no parameter or optimizer "
                       "state named 0.weight.bogus"):
        step.load_state_dict({**state, "0.weight.bogus": state["0.weight"]})
    with pytest.raises(remat.RematError, match="step must be a count"):
        step.load_state_dict({**state, "step": -1})
    with pytest.raises(remat.RematError, match="has shape"):
        step.load_state_dict({**state, "0.weight.exp_avg": torch.zeros(2)})


def test_data_parallel_parts_and_their_errors():
    make, make_torch = CASES["sgd-momentum"]
    batches = [batch(s) for s in range(1, 4)]
    split = remat.compile(small_cnn(), batch(0), optimizer=make(),
                          data_parallel=True)
    # backward() updates nothing; apply() then takes the step.
    before = split.state_dict()
    grads = split.backward(*batches[0])
    assert list(grads) == list(dict(small_cnn().named_parameters()))
    assert split.last_loss > 0
    after = split.state_dict()
    assert all(torch.equal(before[n], after[n]) for n in before if n != "step")
    split.apply(list(grads.values()))
    for x, y in batches[1:]:
        split(x, y)  # backward and apply
    close(split.state_dict(), train_torch(make_torch, batches))

    plain = remat.compile(small_cnn(), batch(0), optimizer=make())
    with pytest.raises(remat.RematError, match=re.escape(
            "backward() needs a step compiled with data_parallel=True")):
        plain.backward(*batches[0])
    with pytest.raises(remat.RematError, match=re.escape(
            "apply takes 8 gradients, got 1")):
        split.apply([grads["0.weight"]])
    with pytest.raises(remat.RematError, match="missing 0.bias"):
        split.apply({n: g for n, g in grads.items() if n != "0.bias"})
    with pytest.raises(remat.RematError, match=re.escape(
            "grad '0.weight.grad': expected shape (4, 1, 3, 3)")):
        split.apply({**grads, "0.weight": torch.zeros(4, dtype=torch.float64)})
    with pytest.raises(remat.RematError, match="not contiguous"):
        split.apply({**grads, "5.weight": grads["5.weight"].t().contiguous().t()})
    with pytest.raises(remat.RematError, match=re.escape(
            "data_parallel is implemented for target 'cpu'")):
        remat.compile(small_cnn(), batch(0), target="cuda",
                      data_parallel=True)
    split.close()
    with pytest.raises(remat.RematError, match="the step was closed"):
        split.apply(grads)


def test_limit_below_reach_counts_the_state():
    with pytest.raises(remat.RematError, match=r"the smallest peak the 'auto' "
                       r"solver reaches is [0-9]+ bytes \(fixed part [0-9]+ "
                       r"bytes: parameters, optimizer state, inputs and "
                       r"labels\)"):
        remat.compile(small_cnn(), batch(0), optimizer=remat.Adam(),
                      memory_limit=100)


def test_optimizers_print_as_torch_optim_takes_them():
    assert repr(remat.AdamW(lr=1e-3)) == (
        "remat.AdamW(lr=0.001, betas=(0.9, 0.999), eps=1e-08, "
        "weight_decay=0.01)")
    assert remat.SGD(lr=0.1, momentum=0.9, nesterov=True).spec() == \
        "sgd:momentum=0.9,dampening=0.0,weight-decay=0.0,nesterov"
