//===- Passes.td - train dialect passes --------------------*- tablegen -*-===//
//
// Autodiff, rematerialization and the memory report.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
#define REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainAutodiff : Pass<"train-autodiff", "func::FuncOp"> {
  let summary = "Builds the training step (backward pass and SGD update)";
  let description = [{
    Turns a forward model (arguments with `train.role`, one scalar result:
    the loss) into a training step by reverse-mode differentiation through
    `AutodiffOpInterface`. The step returns the loss, then each parameter
    updated by SGD (`train.sgd_update`, placed right after the parameter's
    gradient is complete so gradients die early), then, with
    `return-gradients`, each parameter's gradient. Results carry
    `train.role` and `train.param`; the function gets `train.step`.
    Functions already marked `train.step`, or with no `train.role`
    arguments, are left alone.
  }];
  let options = [
    Option<"learningRate", "learning-rate", "double", "0.01",
           "SGD learning rate">,
    Option<"returnGradients", "return-gradients", "bool", "false",
           "Also return the gradient of every parameter">,
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

#endif // REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
