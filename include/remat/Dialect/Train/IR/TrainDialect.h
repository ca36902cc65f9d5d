//===- TrainDialect.h - The train dialect -----------------------*- C++ -*-===//
//
// Declares the train dialect, its ops and interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace mlir::remat::train {
/// The largest tensor the dialect takes, in bytes: 2^53 (8 PiB), so that
/// every size, and the sums the memory model and the solvers form in 64-bit
/// integers and doubles, stays exact.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 53;

/// The scratch a target's library needs while an op computes, in bytes
/// (remat-conv-library sets it on convolutions it hands to oneDNN); the op
/// reports it through getWorkspaceBytes.
constexpr llvm::StringLiteral kWorkspaceBytesAttr = "remat.workspace_bytes";
/// The operand layouts oneDNN runs a convolution in ("blocked" or "plain",
/// see remat-conv-library).
constexpr llvm::StringLiteral kConvLayoutAttr = "remat.conv_layout";

/// The bytes of a statically shaped tensor type, 0 for anything else;
/// std::nullopt where they exceed kMaxTensorBytes (or 64 bits).
std::optional<int64_t> getCheckedTensorBytes(Type type);

/// Returns the bytes of a statically shaped tensor type, 0 for anything else.
/// Types of verified train ops and train function arguments fit
/// kMaxTensorBytes.
int64_t getTensorBytes(Type type);

/// The product of `factors`, or INT64_MAX where it does not fit: FLOP counts
/// saturate, and the memory model refuses an op whose count does.
int64_t saturatingProduct(std::initializer_list<int64_t> factors);

/// Checks that every statically shaped tensor `op` reads or writes fits
/// kMaxTensorBytes, naming the first that does not.
LogicalResult verifyTensorSizes(Operation *op);

/// Every train op: its tensors fit kMaxTensorBytes.
template <typename ConcreteType>
class TensorSizesFit : public OpTrait::TraitBase<ConcreteType, TensorSizesFit> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyTensorSizes(op);
  }
};
} // namespace mlir::remat::train

#include "remat/Dialect/Train/IR/TrainEnums.h.inc"
#include "remat/Dialect/Train/IR/TrainInterfaces.h.inc"
#include "remat/Dialect/Train/IR/TrainOpsDialect.h.inc"
#define GET_ATTRDEF_CLASSES
#include "remat/Dialect/Train/IR/TrainAttrs.h.inc"

#define GET_OP_CLASSES
#include "remat/Dialect/Train/IR/TrainOps.h.inc"

namespace mlir::remat::train {
/// The `train.role` of argument or result `index` of `func`, if it has one.
std::optional<Role> getArgRole(FunctionOpInterface func, unsigned index);
std::optional<Role> getResultRole(FunctionOpInterface func, unsigned index);
void setResultRole(FunctionOpInterface func, unsigned index, Role role);
/// Checks that the float operands and results of `op` share an element type.
LogicalResult verifySameElementType(Operation *op);
/// The adjoint of matmul and batch_matmul: each gradient is one product.
template <typename MatmulLikeOp>
LogicalResult buildMatmulAdjoint(MatmulLikeOp op, OpBuilder &b, Value dy,
                                 SmallVectorImpl<Value> &grads);
} // namespace mlir::remat::train

#endif // REMAT_DIALECT_TRAIN_IR_TRAINDIALECT_H
