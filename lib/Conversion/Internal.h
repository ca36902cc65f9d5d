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
/// On the parallel loops of a convolution's loop nest: what the nest
/// computes, for remat-conv-to-runtime. A dictionary with `kind` (0 forward, 1
/// input gradient, 2 weight gradient, the runtime's numbering), `window` (i64
/// array: stride h, w, padding h, w, dilation h, w, groups) and, for a
/// convolution remat-conv-library handed to oneDNN, `workspace` (i64
/// bytes) and `layout` (i32: 1 blocked, 0 plain). The nest's two
/// reads are, in order: input and weight (kind 0), output gradient and
/// weight (1), input and output gradient (2).
constexpr llvm::StringLiteral kConvAttr = "remat.conv2d";
/// A 1-D view of `v` (tensor.collapse_shape, no copy after bufferization).
Value collapseToVector(OpBuilder &b, Location loc, Value v);
/// A view of `v` with the shape of `target` (same number of elements).
Value expandTo(OpBuilder &b, Location loc, Value v, RankedTensorType target);
} // namespace mlir::remat

#endif // REMAT_LIB_CONVERSION_INTERNAL_H
