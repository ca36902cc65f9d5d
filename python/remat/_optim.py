"""The optimizers a step can be compiled with, with torch.optim's
hyperparameters, names and defaults. The step applies them with PyTorch's
formulas (include/remat/Dialect/Train/IR/TrainOptimizerOps.td); their state
(momentum buffers, Adam's averages) is part of the step's fixed memory. `lr`
is read at every step, so a schedule may change it between steps."""

import math

from ._step import RematError


class _Optimizer:
    name = ""

    def __init__(self, lr, **hyper):
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr >= 0):
            raise RematError(f"{type(self).__name__}: lr must be a finite "
                             f"number >= 0, got {lr!r}")
        self.lr = float(lr)
        # The ranges torch.optim accepts.
        ranges = {"momentum": (0, math.inf), "dampening": (0, 1),
                  "weight_decay": (0, math.inf), "eps": (0, math.inf),
                  "beta1": (0, 1), "beta2": (0, 1)}
        for key, value in hyper.items():
            if isinstance(value, bool):
                continue
            if not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise RematError(f"{type(self).__name__}: {key} must be a "
                                 f"finite number, got {value!r}")
            low, high = ranges[key]
            open_high = key.startswith("beta")  # a beta of 1 never forgets
            if not low <= value <= high or (open_high and value == high):
                close = ")" if open_high else "]"
                raise RematError(f"{type(self).__name__}: {key} must be in "
                                 f"[{low}, {high}{close}, got {value!r}")
        self.hyper = hyper

    def spec(self):
        """remat-compile's --optimizer value."""
        items = []
        for key, value in self.hyper.items():
            key = key.replace("_", "-")
            if isinstance(value, bool):
                if value:
                    items.append(key)
            else:
                items.append(f"{key}={float(value)!r}")
        return self.name + (":" + ",".join(items) if items else "")

    def __repr__(self):
        items = dict(self.hyper)
        if "beta1" in items:  # shown as torch.optim takes them
            items = {"betas": (items.pop("beta1"), items.pop("beta2")),
                     **items}
        args = ", ".join(f"{k}={v!r}" for k, v in
                         [("lr", self.lr), *items.items()])
        return f"remat.{type(self).__name__}({args})"


class SGD(_Optimizer):
    """torch.optim.SGD: momentum, dampening, Nesterov, weight decay."""
    name = "sgd"

    def __init__(self, lr=1e-3, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise RematError("SGD: Nesterov momentum needs a momentum and "
                             "zero dampening")
        super().__init__(lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=bool(nesterov))


class Adam(_Optimizer):
    """torch.optim.Adam (weight decay added to the gradient)."""
    name = "adam"

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0):
        beta1, beta2 = betas
        super().__init__(lr, beta1=beta1, beta2=beta2, eps=eps,
                         weight_decay=weight_decay)


class AdamW(Adam):
    """torch.optim.AdamW (decoupled weight decay)."""
    name = "adamw"

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        super().__init__(lr, betas, eps, weight_decay)
