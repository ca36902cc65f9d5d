//===- Passes.td - train dialect passes --------------------*- tablegen -*-===//
//
// Autodiff, rematerialization and the memory report.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
#define REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainAutodiff : Pass<"train-autodiff", "func::FuncOp"> {
  let summary = "Builds the training step (backward pass and optimizer update)";
  let description = [{
    Turns a forward model (arguments with `train.role`, one scalar result:
    the loss) into a training step by reverse-mode differentiation through
    `AutodiffOpInterface`. Each parameter is updated by the optimizer
    (TrainOptimizerOps.td) right after its gradient is complete, so
    gradients die early: `sgd` (with `momentum`, `dampening`, `nesterov`,
    `weight-decay`), `adam` or `adamw` (`beta1`, `beta2`, `eps`,
    `weight-decay`), with torch.optim's formulas and defaults.

    Optimizer state becomes arguments with role `state`, named after the
    parameter as torch.optim's state is (`w.momentum_buffer`, `w.exp_avg`,
    `w.exp_avg_sq`), updated in place; a `step` argument (i64, from 1)
    where the optimizer needs the step count; with `runtime-lr`, an `lr`
    argument (the model's float type) replaces the compiled
    `learning-rate`, so a schedule needs no recompile.

    The step returns the loss, each updated parameter, each updated state
    and, with `return-gradients`, each parameter's gradient. For data
    parallelism the step splits in two: `mode=backward` returns the loss
    and the gradients and updates nothing; `mode=apply` drops the model and
    updates the parameters and state from gradient arguments (role `grad`,
    `w.grad`), so gradients can be all-reduced in between. Results carry
    `train.role` and `train.param`; the function gets `train.step`.
    Functions already marked `train.step`, or with no `train.role`
    arguments, are left alone.
  }];
  let options = [
    Option<"learningRate", "learning-rate", "double", "0.01",
           "Learning rate (the lr argument's value with runtime-lr)">,
    Option<"runtimeLearningRate", "runtime-lr", "bool", "false",
           "Take the learning rate as a step argument">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, adam or adamw">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "Weight decay (default: 0, and 0.01 for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's first beta">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's second beta">,
    Option<"eps", "eps", "double", "1e-8", "Adam's epsilon">,
    Option<"returnGradients", "return-gradients", "bool", "false",
           "Also return the gradient of every parameter">,
    Option<"mode", "mode", "std::string", "\"step\"",
           "step (backward pass and update), backward (loss and gradients) "
           "or apply (the update alone, from gradient arguments)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TrainRemat : Pass<"train-remat", "func::FuncOp"> {
  let summary = "Fits a training step under a memory limit by recomputation";
  let description = [{
    Builds the rematerialization graph of the function (costs from
    `CostOpInterface`, sizes from the tensor types, liveness from the block
    order), asks a solver for a schedule that keeps the peak of everything
    the step holds at once (parameters, inputs, activations, gradients,
    temporaries) under `memory-limit`, and applies it: recomputed ops are
    cloned right before their first use and marked `train.recompute` so that
    `cse` cannot fold them back, and the block is reordered. The rewritten
    function is simulated again; a remark gives the predicted peak, its fixed
    part and the extra compute. A limit the solver cannot meet is an error
    that names the smallest budget it reaches.

    `memory-limit` takes bytes (`1048576`), binary units (`512KiB`, `64MiB`,
    `2GiB`), decimal units (`KB`, `MB`, `GB`) or a percentage of the
    no-remat peak (`50%`).
  }];
  let options = [
    Option<"memoryLimit", "memory-limit", "std::string", "",
           "Peak memory the step may use (required)">,
    Option<"solver", "solver", "std::string", "\"auto\"",
           "Solver: auto (default), greedy, milp, chen-greedy, chen-sqrt, every-layer or none">,
    Option<"timeLimit", "time-limit", "double", "10.0",
           "Solver time limit in seconds">,
    Option<"searchSeconds", "search-seconds", "double", "0.0",
           "auto: seconds of search beyond its default (milliseconds, "
           "deterministic), spent on restarts from moved layer "
           "boundaries, then annealing from its answer (which then "
           "depends on the machine's speed)">,
    Option<"costModel", "cost-model", "std::string", "\"flops\"",
           "Price of recomputing an op: flops, roofline (time on the "
           "target: FLOPs over the compute rate or bytes over the "
           "bandwidth, whichever is longer, plus a per-op overhead) or "
           "profile (measured times, the roofline elsewhere)">,
    Option<"costProfile", "cost-profile", "std::string", "",
           "The measured op times (remat-run --profile's output); implies "
           "cost-model=profile">,
    Option<"targetDesc", "target-desc", "std::string", "",
           "roofline: the target's rates as JSON (default: the built-in "
           "description of `target`)">,
    Option<"target", "target", "std::string", "\"cpu\"",
           "roofline: the built-in target, cpu or a CUDA chip (sm_80, "
           "sm_90)">,
  ];
}

def TrainPrintMemory : Pass<"train-print-memory", "func::FuncOp"> {
  let summary = "Reports a function's peak memory as remarks";
  let description = [{
    Simulates the function in block order, freeing each value after its last
    use, and emits a remark on the function with the peak bytes, its fixed
    part (the arguments) and the total compute, a remark on the op where the
    peak happens, and one on each of the largest values live at the peak.
  }];
  let options = [
    Option<"top", "top", "unsigned", "3",
           "How many of the largest live values to report">,
  ];
}

def TrainProfileOps : Pass<"train-profile-ops", "ModuleOp"> {
  let summary = "Brackets each priced op with the runtime's profile timers";
  let description = [{
    For a profiling build (remat-compile --profile-ops): each op with a cost
    model in a function marked `train.step` is preceded by a call to
    `remat_rt_profile_begin(id)` and followed by one to
    `remat_rt_profile_end(id)`, where `id` indexes the module's
    `remat.profile_ops`: one entry per distinct op kind, location (without
    the file name) and types, so that a recomputed op adds its time to the
    original's. remat-run --profile reads the timers and writes what each
    entry cost; the calls order the op's lowered code between them, and the
    runtime's timers cost tens of nanoseconds a call.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::arith::ArithDialect"];
}

#endif // REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
