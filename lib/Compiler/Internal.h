//===- Internal.h - Compiler library internals ------------------*- C++ -*-===//

#ifndef REMAT_LIB_COMPILER_INTERNAL_H
#define REMAT_LIB_COMPILER_INTERNAL_H

#include "remat/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::remat::detail {

/// The one function with `train.role` arguments (or `train.step`).
FailureOr<func::FuncOp> findModel(ModuleOp module);

/// Fills the manifest's function, arguments, results and signature;
/// `learningRate` is the lr argument's value where the step takes one.
LogicalResult describeStep(func::FuncOp step, double learningRate,
                           ::remat::Manifest &manifest);

} // namespace mlir::remat::detail

#endif // REMAT_LIB_COMPILER_INTERNAL_H
