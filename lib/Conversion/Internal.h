//===- Internal.h - Shared pieces of the train lowering ---------*- C++ -*-===//
//
// Private to lib/Conversion.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_CONVERSION_INTERNAL_H
#define REMAT_LIB_CONVERSION_INTERNAL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::remat {
/// Lowers a train op of CNNs and transformers at the builder's position;
/// returns null for ops it does not handle.
Value lowerNNOp(OpBuilder &b, Operation *op);
/// A 1-D view of `v` (tensor.collapse_shape, no copy after bufferization).
Value collapseToVector(OpBuilder &b, Location loc, Value v);
/// A view of `v` with the shape of `target` (same number of elements).
Value expandTo(OpBuilder &b, Location loc, Value v, RankedTensorType target);
} // namespace mlir::remat

#endif // REMAT_LIB_CONVERSION_INTERNAL_H
