//===- Passes.h - train dialect passes --------------------------*- C++ -*-===//
//
// Declarations of the train dialect's passes.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_H
#define REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::remat::train {

#define GEN_PASS_DECL
#include "remat/Dialect/Train/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "remat/Dialect/Train/Transforms/Passes.h.inc"

} // namespace mlir::remat::train

#endif // REMAT_DIALECT_TRAIN_TRANSFORMS_PASSES_H
