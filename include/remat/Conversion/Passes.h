//===- Passes.h - Lowering passes -------------------------------*- C++ -*-===//
//
// Declarations of the lowering passes.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_CONVERSION_PASSES_H
#define REMAT_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::remat {

/// Marks an scf.for nest, emitted by the train lowering, whose iterations
/// write disjoint parts of its result: the GPU lowering runs them as threads.
inline constexpr llvm::StringLiteral kParallelLoopAttr = "remat.parallel";
/// Marks an scf.for nest, emitted by the train lowering, that folds values
/// into its iteration arguments and does nothing else: its iterations are
/// independent but for the accumulators, so that the GPU lowering may split
/// them over threads and combine partial results (when each accumulator's
/// update is an associative arith op).
inline constexpr llvm::StringLiteral kReductionLoopAttr = "remat.reduction";

#define GEN_PASS_DECL
#include "remat/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "remat/Conversion/Passes.h.inc"

} // namespace mlir::remat

#endif // REMAT_CONVERSION_PASSES_H
