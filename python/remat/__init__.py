"""Train a PyTorch model with Remat from a Python loop.

    step = remat.compile(model, example_inputs=(x, y), loss="cross_entropy",
                         optimizer=remat.AdamW(lr=1e-3, weight_decay=0.01),
                         memory_limit="50%")
    for x, y in loader:
        loss = step(x, y)        # one training step in this process
    step.copy_to(model)          # the trained parameters back in the module
    print(step.report())

`compile` captures the model at the ATen level (python/remat_export.py),
compiles the step with remat-compile under the memory limit, caches the
result by content hash, and loads it into this process through the
runtime's C API (libremat_runtime.so, over ctypes). Each call binds the
batch's memory to the step's arguments without a copy and runs one step;
parameters and optimizer state (remat.SGD, Adam, AdamW, with torch.optim's
formulas) are updated in place in the step's own buffers.

`profile(model, example_inputs, "model.profile.json")` times each op of
the step; `compile(..., cost_profile="model.profile.json")` then prices
recomputation by those times.

`max_batch(build_model, input_for_batch, "16GiB")` finds the largest batch
whose step fits a memory size, per solver, by the compiler's plan
(also `python3 -m remat max-batch`).
"""

from ._batch import max_batch
from ._optim import SGD, Adam, AdamW
from ._step import RematError, Step, compile, profile

__all__ = ["Adam", "AdamW", "RematError", "SGD", "Step", "compile",
           "max_batch", "profile"]
