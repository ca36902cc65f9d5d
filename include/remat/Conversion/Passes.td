//===- Passes.td - Lowering passes -------------------------*- tablegen -*-===//
//
// From train to linalg, and the small steps around upstream bufferization
// that keep the memory model true after lowering.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_CONVERSION_PASSES_TD
#define REMAT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrainToLinalg : Pass<"convert-train-to-linalg", "ModuleOp"> {
  let summary = "Lowers train ops to linalg on tensors";
  let description = [{
    Each train op becomes linalg ops whose only fresh tensor is the op's
    result (`tensor.empty`, filled when it accumulates), so that after
    one-shot bufferization every train op allocates exactly its result, as
    the memory model assumes. `train.sgd_update` of a function argument
    writes into the argument (the parameter is donated). Discardable
    attributes such as `train.recompute` are copied to the linalg ops, and
    the op order is kept.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def RematDropDonatedResults : Pass<"remat-drop-donated-results", "ModuleOp"> {
  let summary = "Removes step results that are updated parameters in place";
  let description = [{
    After one-shot bufferization an updated parameter is returned as the
    argument's own buffer. This pass removes such results from `train.step`
    functions (the driver reads the update from its own buffer) and fails if
    an `updated_param` result did not bufferize in place, since a copy would
    break the memory model. Upstream `drop-equivalent-buffer-results` does
    the same for private functions only; the step is public.
  }];
}

def RematMatmulToRuntime : Pass<"remat-matmul-to-runtime", "func::FuncOp"> {
  let summary = "Replaces linalg.matmul on memrefs by a call into the runtime";
  let description = [{
    Calls `remat_rt_matmul_f32` / `remat_rt_matmul_f64` (C interface,
    `C += op(A) op(B)`), which the runtime implements with an optimized BLAS
    when one was found at build time. Transposed operands (from
    `linalg.matmul` indexing maps) become BLAS transpose flags, so no
    transposed copy is allocated.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // REMAT_CONVERSION_PASSES_TD
