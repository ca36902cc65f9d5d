//===- TrainNNOps.cpp - Ops of CNNs and transformers ----------------------===//
//
// Verifiers, costs and adjoints of the ops beyond the MLP: broadcasting
// arithmetic, reductions, layout changes, activations, normalizations,
// losses over class indices, embeddings, dropout, convolution, pooling,
// upsampling, concat and slice, comparisons and selection. Adjoints of these
// ops build dedicated gradient ops rather than chains of primitives, so that
// each gradient allocates one tensor and keeps only what PyTorch's kernels
// keep; amax/amin, whose gradient PyTorch also builds from primitives, are
// the exception.
//
//===----------------------------------------------------------------------===//

#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::remat::train;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
static ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }
static int64_t numel(Value v) { return tensorType(v).getNumElements(); }

static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

static LogicalResult expectRank(Operation *op, Value v, int64_t rank,
                                StringRef what) {
  if (tensorType(v).getRank() == rank)
    return success();
  return op->emitOpError("expects a rank-")
         << rank << " " << what << ", got " << v.getType();
}

/// NumPy broadcasting of two shapes aligned at the last dimension.
static std::optional<SmallVector<int64_t>>
broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Whether `from` broadcasts to exactly `to`.
static bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  auto b = broadcastShapes(from, to);
  return b && ArrayRef<int64_t>(*b) == to;
}

/// `shape` without the (sorted, distinct, in range) dimensions `dims`.
static LogicalResult removeDims(Operation *op, ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> dims,
                                SmallVectorImpl<int64_t> &out) {
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= static_cast<int64_t>(shape.size()))
      return op->emitOpError("dimension ")
             << d << " out of range for rank " << shape.size();
    if (i > 0 && d <= dims[i - 1])
      return op->emitOpError("dims must be sorted and distinct");
  }
  for (auto [i, d] : llvm::enumerate(shape))
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      out.push_back(d);
  return success();
}

static LogicalResult expectShape(Operation *op, Value v,
                                 ArrayRef<int64_t> shape, StringRef what) {
  if (shapeOf(v) == shape)
    return success();
  return op->emitOpError() << what << " shape must be " << formatShape(shape)
                           << ", got " << formatShape(shapeOf(v));
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic with broadcasting
//===----------------------------------------------------------------------===//

static LogicalResult verifyBroadcastBinary(Operation *op) {
  if (failed(verifySameElementType(op)))
    return failure();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto shape = broadcastShapes(shapeOf(lhs), shapeOf(rhs));
  if (!shape)
    return op->emitOpError("operand shapes ")
           << formatShape(shapeOf(lhs)) << " and " << formatShape(shapeOf(rhs))
           << " are not broadcastable";
  return expectShape(op, op->getResult(0), *shape, "result");
}

LogicalResult AddOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult SubOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult MulOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult DivOp::verify() { return verifyBroadcastBinary(*this); }

/// Reduces a gradient of the broadcast result to `operand`'s shape.
static Value sumTo(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (grad.getType() == operand.getType())
    return grad;
  return SumToOp::create(b, loc, operand.getType(), grad);
}

/// A rank-0 constant of `like`'s element type; broadcasts to any shape.
static Value scalar(OpBuilder &b, Location loc, Value like, double v) {
  auto type = RankedTensorType::get({}, tensorType(like).getElementType());
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v)));
}

LogicalResult AddOp::buildAdjoint(OpBuilder &b, Value dy,
                                  SmallVectorImpl<Value> &grads) {
  grads.push_back(sumTo(b, getLoc(), dy, getLhs()));
  grads.push_back(sumTo(b, getLoc(), dy, getRhs()));
  return success();
}

LogicalResult SubOp::buildAdjoint(OpBuilder &b, Value dy,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  grads.push_back(sumTo(b, loc, dy, getLhs()));
  Value neg = MulOp::create(b, loc, dy.getType(), dy, scalar(b, loc, dy, -1));
  grads.push_back(sumTo(b, loc, neg, getRhs()));
  return success();
}

LogicalResult MulOp::buildAdjoint(OpBuilder &b, Value dy,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value da = MulOp::create(b, loc, dy.getType(), dy, getRhs());
  grads.push_back(sumTo(b, loc, da, getLhs()));
  Value db = MulOp::create(b, loc, dy.getType(), dy, getLhs());
  grads.push_back(sumTo(b, loc, db, getRhs()));
  return success();
}

LogicalResult DivOp::buildAdjoint(OpBuilder &b, Value dy,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value da = DivOp::create(b, loc, dy.getType(), dy, getRhs());
  grads.push_back(sumTo(b, loc, da, getLhs()));
  Value db = DivRhsGradOp::create(b, loc, dy, getLhs(), getRhs());
  grads.push_back(sumTo(b, loc, db, getRhs()));
  return success();
}

/// The operands of a gradient op broadcast to the gradient's shape.
static LogicalResult verifyOperandsBroadcastToGrad(Operation *op, Value grad,
                                                   ValueRange operands) {
  if (failed(verifySameElementType(op)))
    return failure();
  for (Value v : operands)
    if (!broadcastsTo(shapeOf(v), shapeOf(grad)))
      return op->emitOpError("operands must broadcast to the gradient's shape ")
             << formatShape(shapeOf(grad));
  return success();
}

LogicalResult DivRhsGradOp::verify() {
  return verifyOperandsBroadcastToGrad(*this, getGrad(), {getLhs(), getRhs()});
}

LogicalResult MaximumOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult MinimumOp::verify() { return verifyBroadcastBinary(*this); }

/// The two halves of maximum's or minimum's adjoint: `lhs` against `rhs`,
/// then swapped.
static void extremumAdjoint(OpBuilder &b, Location loc, Value dy, Value lhs,
                            Value rhs, bool minimum,
                            SmallVectorImpl<Value> &grads) {
  UnitAttr flag = minimum ? b.getUnitAttr() : UnitAttr();
  Value da = ExtremumGradOp::create(b, loc, dy.getType(), dy, lhs, rhs, flag);
  grads.push_back(sumTo(b, loc, da, lhs));
  Value db = ExtremumGradOp::create(b, loc, dy.getType(), dy, rhs, lhs, flag);
  grads.push_back(sumTo(b, loc, db, rhs));
}

LogicalResult MaximumOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  extremumAdjoint(b, getLoc(), dy, getLhs(), getRhs(), false, grads);
  return success();
}
LogicalResult MinimumOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  extremumAdjoint(b, getLoc(), dy, getLhs(), getRhs(), true, grads);
  return success();
}

LogicalResult ExtremumGradOp::verify() {
  return verifyOperandsBroadcastToGrad(*this, getGrad(), {getLhs(), getRhs()});
}

/// The shape the operands broadcast to, or an error naming them.
static LogicalResult verifyBroadcastResult(Operation *op) {
  SmallVector<int64_t> shape;
  for (Value v : op->getOperands()) {
    auto b = broadcastShapes(shape, shapeOf(v));
    if (!b)
      return op->emitOpError("operand shape ")
             << formatShape(shapeOf(v)) << " does not broadcast with "
             << formatShape(shape);
    shape = *b;
  }
  return expectShape(op, op->getResult(0), shape, "result");
}

LogicalResult CompareOp::verify() {
  Type lhs = tensorType(getLhs()).getElementType();
  Type rhs = tensorType(getRhs()).getElementType();
  if (lhs != rhs)
    return emitOpError("operands must have one element type, got ")
           << lhs << " and " << rhs;
  return verifyBroadcastResult(*this);
}

LogicalResult CompareOp::buildAdjoint(OpBuilder &, Value,
                                      SmallVectorImpl<Value> &grads) {
  grads.append({Value(), Value()}); // a mask is piecewise constant
  return success();
}

LogicalResult StopGradientOp::buildAdjoint(OpBuilder &, Value,
                                           SmallVectorImpl<Value> &grads) {
  grads.push_back(Value());
  return success();
}

LogicalResult WhereOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  return verifyBroadcastResult(*this);
}

LogicalResult WhereOp::buildAdjoint(OpBuilder &b, Value dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value zero = scalar(b, loc, dy, 0.0);
  grads.push_back(Value());
  Value da = WhereOp::create(b, loc, dy.getType(), getCondition(), dy, zero);
  grads.push_back(sumTo(b, loc, da, getLhs()));
  Value db = WhereOp::create(b, loc, dy.getType(), getCondition(), zero, dy);
  grads.push_back(sumTo(b, loc, db, getRhs()));
  return success();
}

LogicalResult SumToOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  if (!broadcastsTo(shapeOf(getResult()), shapeOf(getInput())))
    return emitOpError("result shape ")
           << formatShape(shapeOf(getResult()))
           << " does not broadcast to the operand shape "
           << formatShape(shapeOf(getInput()));
  return success();
}
int64_t SumToOp::getFlops() { return numel(getInput()); }

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// `small` is `large` without the dimensions `dims`.
static LogicalResult verifyReduce(Operation *op, Value large, Value small,
                                  ArrayRef<int64_t> dims, StringRef what) {
  if (failed(verifySameElementType(op)))
    return failure();
  SmallVector<int64_t> kept;
  if (failed(removeDims(op, shapeOf(large), dims, kept)))
    return failure();
  return expectShape(op, small, kept, what);
}

LogicalResult SumOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), "result");
}
LogicalResult MeanOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), "result");
}
LogicalResult AmaxOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), "result");
}
LogicalResult AminOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), "result");
}
LogicalResult BroadcastOp::verify() {
  return verifyReduce(*this, getResult(), getInput(), getDims(), "operand");
}

int64_t SumOp::getFlops() { return numel(getInput()); }
int64_t MeanOp::getFlops() { return numel(getInput()); }
int64_t AmaxOp::getFlops() { return numel(getInput()); }
int64_t AminOp::getFlops() { return numel(getInput()); }

LogicalResult SumOp::buildAdjoint(OpBuilder &b, Value dy,
                                  SmallVectorImpl<Value> &grads) {
  grads.push_back(BroadcastOp::create(b, getLoc(), getInput().getType(), dy,
                                      getDimsAttr(), b.getF64FloatAttr(1.0)));
  return success();
}

LogicalResult MeanOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  double count = static_cast<double>(numel(getInput())) /
                 static_cast<double>(numel(getResult()));
  grads.push_back(BroadcastOp::create(b, getLoc(), getInput().getType(), dy,
                                      getDimsAttr(),
                                      b.getF64FloatAttr(1.0 / count)));
  return success();
}

/// PyTorch's amax/amin adjoint: the gradient split evenly among the
/// elements equal to the extremum, `mask * broadcast(dy / sum(mask))`.
static void extremumReduceAdjoint(OpBuilder &b, Location loc, Value x, Value y,
                                  Value dy, DenseI64ArrayAttr dims,
                                  SmallVectorImpl<Value> &grads) {
  Type full = x.getType();
  FloatAttr one = b.getF64FloatAttr(1.0);
  Value wide = BroadcastOp::create(b, loc, full, y, dims, one);
  Value mask = CompareOp::create(
      b, loc, full, x, wide,
      ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq));
  Value count = SumOp::create(b, loc, y.getType(), mask, dims);
  Value share = DivOp::create(b, loc, y.getType(), dy, count);
  Value spread = BroadcastOp::create(b, loc, full, share, dims, one);
  grads.push_back(MulOp::create(b, loc, full, mask, spread));
}

LogicalResult AmaxOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  extremumReduceAdjoint(b, getLoc(), getInput(), getResult(), dy, getDimsAttr(),
                        grads);
  return success();
}
LogicalResult AminOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  extremumReduceAdjoint(b, getLoc(), getInput(), getResult(), dy, getDimsAttr(),
                        grads);
  return success();
}

LogicalResult BroadcastOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value g = SumOp::create(b, loc, getInput().getType(), dy, getDims());
  double scale = getScale().convertToDouble();
  if (scale != 1.0)
    g = MulOp::create(b, loc, g.getType(), g, scalar(b, loc, g, scale));
  grads.push_back(g);
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  if (!(getMin().convertToDouble() < getMax().convertToDouble()))
    return emitOpError("needs min < max, got [")
           << getMin().convertToDouble() << ", " << getMax().convertToDouble()
           << "]";
  return success();
}
LogicalResult ClampOp::buildAdjoint(OpBuilder &b, Value dy,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(ClampGradOp::create(b, getLoc(), dy, getResult(),
                                      getMinAttr(), getMaxAttr()));
  return success();
}

/// Row-wise ops work along the last dimension, which a scalar lacks.
static LogicalResult verifyHasRows(Operation *op) {
  if (cast<RankedTensorType>(op->getResult(0).getType()).getRank() == 0)
    return op->emitOpError("works along the last dimension and needs a "
                           "tensor of rank 1 or more");
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifyHasRows(*this); }
LogicalResult SoftmaxGradOp::verify() { return verifyHasRows(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifyHasRows(*this); }
LogicalResult LogSoftmaxGradOp::verify() { return verifyHasRows(*this); }

LogicalResult TanhOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  grads.push_back(TanhGradOp::create(b, getLoc(), dy, getResult()));
  return success();
}
LogicalResult SigmoidOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(SigmoidGradOp::create(b, getLoc(), dy, getResult()));
  return success();
}
LogicalResult GeluOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  grads.push_back(GeluGradOp::create(b, getLoc(), dy, getInput()));
  return success();
}

/// FLOPs per element of a train.unary kind, forward and gradient.
static std::pair<int64_t, int64_t> unaryFlops(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::abs:
  case UnaryKind::leaky_relu:
    return {1, 2};
  case UnaryKind::hardsigmoid:
  case UnaryKind::hardswish:
    return {4, 4};
  case UnaryKind::sqrt:
  case UnaryKind::rsqrt:
    return {2, 4};
  case UnaryKind::silu:
  case UnaryKind::elu:
    return {6, 10};
  case UnaryKind::softplus:
    return {10, 10};
  case UnaryKind::mish:
    return {16, 24};
  default:
    return {8, 10};
  }
}

static bool unaryNeedsAlpha(UnaryKind kind) {
  return kind == UnaryKind::pow || kind == UnaryKind::leaky_relu ||
         kind == UnaryKind::elu;
}

static LogicalResult verifyUnaryAlpha(Operation *op, UnaryKind kind,
                                      std::optional<APFloat> alpha) {
  if (unaryNeedsAlpha(kind) && !alpha)
    return op->emitOpError("kind '")
           << stringifyUnaryKind(kind) << "' needs an 'alpha' attribute";
  if (!unaryNeedsAlpha(kind) && alpha)
    return op->emitOpError("kind '")
           << stringifyUnaryKind(kind) << "' takes no 'alpha' attribute";
  return success();
}
LogicalResult UnaryMathOp::verify() {
  return verifyUnaryAlpha(*this, getKind(), getAlpha());
}
LogicalResult UnaryMathGradOp::verify() {
  return verifyUnaryAlpha(*this, getKind(), getAlpha());
}
int64_t UnaryMathOp::getFlops() {
  return unaryFlops(getKind()).first * numel(getResult());
}
int64_t UnaryMathGradOp::getFlops() {
  return unaryFlops(getKind()).second * numel(getResult());
}
LogicalResult UnaryMathOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(UnaryMathGradOp::create(b, getLoc(), dy, getInput(),
                                          getKindAttr(), getAlphaAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  if (numel(getInput()) != numel(getResult()))
    return emitOpError("cannot reshape ")
           << numel(getInput()) << " elements into " << numel(getResult());
  return success();
}
LogicalResult ReshapeOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult CastOp::verify() {
  if (shapeOf(getInput()) != shapeOf(getResult()))
    return emitOpError("changes the shape; a cast converts the element type "
                       "only");
  return success();
}
OpFoldResult CastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : nullptr;
}
LogicalResult CastOp::buildAdjoint(OpBuilder &b, Value dy,
                                   SmallVectorImpl<Value> &grads) {
  grads.push_back(CastOp::create(b, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  ArrayRef<int64_t> perm = getPermutation();
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<bool> seen(in.size(), false);
  if (perm.size() != in.size())
    return emitOpError("permutation has ")
           << perm.size() << " entries for rank " << in.size();
  SmallVector<int64_t> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      return emitOpError("permutation must hold each dimension once");
    seen[p] = true;
    out.push_back(in[p]);
  }
  return expectShape(*this, getResult(), out, "result");
}
LogicalResult TransposeOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads.push_back(
      TransposeOp::create(b, getLoc(), getInput().getType(), dy, inverse));
  return success();
}

LogicalResult BatchMatmulOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  auto lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  if (lhs.size() != 3 || rhs.size() != 3 || shapeOf(getResult()).size() != 3)
    return emitOpError("expects rank-3 operands and result");
  if (lhs[0] != rhs[0])
    return emitOpError("batch sizes differ: ") << lhs[0] << " vs " << rhs[0];
  int64_t m = getTransposeLhs() ? lhs[2] : lhs[1];
  int64_t kl = getTransposeLhs() ? lhs[1] : lhs[2];
  int64_t kr = getTransposeRhs() ? rhs[2] : rhs[1];
  int64_t n = getTransposeRhs() ? rhs[1] : rhs[2];
  if (kl != kr)
    return emitOpError("contraction dimensions differ: ")
           << kl << " (lhs) vs " << kr << " (rhs)";
  return expectShape(*this, getResult(), {lhs[0], m, n}, "result");
}
bool BatchMatmulOp::isContraction() { return true; }
int64_t BatchMatmulOp::getFlops() {
  auto lhs = shapeOf(getLhs());
  return saturatingProduct(
      {2, numel(getResult()), getTransposeLhs() ? lhs[1] : lhs[2]});
}
LogicalResult BatchMatmulOp::buildAdjoint(OpBuilder &b, Value dy,
                                          SmallVectorImpl<Value> &grads) {
  return buildMatmulAdjoint(*this, b, dy, grads);
}

//===----------------------------------------------------------------------===//
// Softmax and masking
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(SoftmaxGradOp::create(b, getLoc(), dy, getResult()));
  return success();
}
LogicalResult LogSoftmaxOp::buildAdjoint(OpBuilder &b, Value dy,
                                         SmallVectorImpl<Value> &grads) {
  grads.push_back(LogSoftmaxGradOp::create(b, getLoc(), dy, getResult()));
  return success();
}

LogicalResult CausalMaskOp::verify() {
  auto shape = shapeOf(getInput());
  if (shape.size() < 2 || shape[shape.size() - 1] != shape[shape.size() - 2])
    return emitOpError("expects square trailing dimensions [..., T, T], got ")
           << getInput().getType();
  return success();
}
LogicalResult CausalMaskOp::buildAdjoint(OpBuilder &b, Value dy,
                                         SmallVectorImpl<Value> &grads) {
  grads.push_back(CausalMaskGradOp::create(b, getLoc(), dy));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// The parameter dimension of a normalization: the last for layer_norm,
/// the channels (dimension 1) for batch_norm.
static LogicalResult verifyNorm(Operation *op, Value input, Value param,
                                bool batch, StringRef what) {
  if (failed(verifySameElementType(op)))
    return failure();
  auto shape = shapeOf(input);
  if (batch && shape.size() < 2)
    return op->emitOpError("expects an input of rank 2 or more (N, C, ...), "
                           "got ")
           << input.getType();
  if (!batch && shape.empty())
    return op->emitOpError("expects an input of rank 1 or more");
  int64_t channels = batch ? shape[1] : shape.back();
  if (failed(expectRank(op, param, 1, what)))
    return failure();
  if (shapeOf(param)[0] != channels)
    return op->emitOpError()
           << what << " size " << shapeOf(param)[0]
           << " differs from the normalized channels " << channels;
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNorm(*this, getInput(), getWeight(), false, "weight")))
    return failure();
  return verifyNorm(*this, getInput(), getBias(), false, "bias");
}
LogicalResult BatchNormOp::verify() {
  if (failed(verifyNorm(*this, getInput(), getWeight(), true, "weight")))
    return failure();
  return verifyNorm(*this, getInput(), getBias(), true, "bias");
}
LogicalResult LayerNormGradInputOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(), false, "weight");
}
LogicalResult BatchNormGradInputOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(), true, "weight");
}
LogicalResult LayerNormGradWeightOp::verify() {
  return verifyNorm(*this, getInput(), getResult(), false, "result");
}
LogicalResult BatchNormGradWeightOp::verify() {
  return verifyNorm(*this, getInput(), getResult(), true, "result");
}

int64_t LayerNormGradWeightOp::getFlops() { return 6 * numel(getInput()); }
int64_t BatchNormGradWeightOp::getFlops() { return 6 * numel(getInput()); }
// Layer norm's weight gradient sums over rows, one thread per weight
// element, from row statistics (mean, 1/std) a first pass leaves in
// scratch; batch norm's sums within its channel and needs none.
int64_t LayerNormGradWeightOp::getWorkspaceBytes() {
  int64_t elemBytes = getTensorBytes(getInput().getType()) / numel(getInput());
  return 2 * (numel(getInput()) / numel(getResult())) * elemBytes;
}
int64_t BatchNormGradWeightOp::getWorkspaceBytes() { return 0; }

LogicalResult LayerNormOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dw = LayerNormGradWeightOp::create(b, loc, getWeight().getType(), dy,
                                           getInput(), getEpsilonAttr());
  Value dx = LayerNormGradInputOp::create(b, loc, dy.getType(), dy, getInput(),
                                          getWeight(), getEpsilonAttr());
  grads.append({dx, dw, sumTo(b, loc, dy, getBias())});
  return success();
}

LogicalResult BatchNormOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dw = BatchNormGradWeightOp::create(b, loc, getWeight().getType(), dy,
                                           getInput(), getEpsilonAttr());
  Value dx = BatchNormGradInputOp::create(b, loc, dy.getType(), dy, getInput(),
                                          getWeight(), getEpsilonAttr());
  SmallVector<int64_t> dims = {0};
  for (int64_t d = 2; d < tensorType(dy).getRank(); ++d)
    dims.push_back(d);
  Value db = SumOp::create(b, loc, getBias().getType(), dy, dims);
  grads.append({dx, dw, db});
  return success();
}

//===----------------------------------------------------------------------===//
// Cross-entropy and embedding
//===----------------------------------------------------------------------===//

static LogicalResult verifyClassification(Operation *op, Value logits,
                                          Value labels) {
  if (failed(verifySameElementType(op)) ||
      failed(expectRank(op, logits, 2, "logits tensor [N, C]")) ||
      failed(expectRank(op, labels, 1, "labels tensor [N]")))
    return failure();
  if (shapeOf(labels)[0] != shapeOf(logits)[0])
    return op->emitOpError("has ") << shapeOf(labels)[0] << " labels for "
                                   << shapeOf(logits)[0] << " rows of logits";
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyClassification(*this, getLogits(), getLabels());
}
LogicalResult CrossEntropyGradOp::verify() {
  return verifyClassification(*this, getLogits(), getLabels());
}
int64_t CrossEntropyOp::getFlops() { return 4 * numel(getLogits()); }
// One loss term per row, written in parallel and summed in order.
int64_t CrossEntropyOp::getWorkspaceBytes() {
  return getTensorBytes(getResult().getType()) *
         cast<RankedTensorType>(getLogits().getType()).getDimSize(0);
}
int64_t CrossEntropyGradOp::getFlops() { return 5 * numel(getLogits()); }
LogicalResult CrossEntropyOp::buildAdjoint(OpBuilder &b, Value dy,
                                           SmallVectorImpl<Value> &grads) {
  grads.push_back(
      CrossEntropyGradOp::create(b, getLoc(), getLogits(), getLabels(), dy));
  grads.push_back(Value()); // labels are data
  return success();
}

static LogicalResult verifyEmbedding(Operation *op, Value table, Value indices,
                                     Value rows) {
  if (failed(verifySameElementType(op)) ||
      failed(expectRank(op, table, 2, "table [V, D]")))
    return failure();
  SmallVector<int64_t> shape(shapeOf(indices));
  shape.push_back(shapeOf(table)[1]);
  return expectShape(op, rows, shape, "gathered rows'");
}

LogicalResult EmbeddingOp::verify() {
  return verifyEmbedding(*this, getTable(), getIndices(), getResult());
}
LogicalResult EmbeddingGradOp::verify() {
  return verifyEmbedding(*this, getResult(), getIndices(), getGrad());
}
int64_t EmbeddingGradOp::getFlops() {
  return numel(getGrad()) + numel(getResult());
}
LogicalResult EmbeddingOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(), dy,
                                          getIndices()));
  grads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double p = getProbability().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError("probability must be in [0, 1), got ") << p;
  return success();
}
// Ten Philox rounds per four elements, plus the compare and scale.
LogicalResult DropoutOp::buildAdjoint(OpBuilder &b, Value dy,
                                      SmallVectorImpl<Value> &grads) {
  // The same mask and scale: d(x * m / (1 - p)) = dy * m / (1 - p).
  grads.push_back(DropoutOp::create(b, getLoc(), dy, getSeed(), getOffset(),
                                    getProbabilityAttr()));
  grads.append({Value(), Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

namespace {
struct ConvGeometry {
  ArrayRef<int64_t> strides, padding, dilation;
  int64_t groups;
};
} // namespace

/// Checks input [N, C, H, W], weight [F, C / groups, KH, KW] and output
/// [N, F, OH, OW] against each other.
static LogicalResult verifyConv(Operation *op, Value input, Value weight,
                                Value output, const ConvGeometry &g) {
  if (failed(verifySameElementType(op)) ||
      failed(expectRank(op, input, 4, "input [N, C, H, W]")) ||
      failed(expectRank(op, weight, 4, "weight [F, C/groups, KH, KW]")) ||
      failed(expectRank(op, output, 4, "output [N, F, OH, OW]")))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (g.strides[i] < 1 || g.dilation[i] < 1 || g.padding[i] < 0)
      return op->emitOpError("strides and dilation must be positive and "
                             "padding non-negative");
  auto in = shapeOf(input), w = shapeOf(weight);
  if (g.groups < 1)
    return op->emitOpError("groups must be at least 1, got ") << g.groups;
  if (in[1] % g.groups || w[0] % g.groups)
    return op->emitOpError("groups (")
           << g.groups << ") must divide the input channels (" << in[1]
           << ") and the filters (" << w[0] << ")";
  if (w[1] * g.groups != in[1])
    return op->emitOpError("weight has ")
           << w[1] << " channels per group, the input " << in[1] / g.groups;
  SmallVector<int64_t> out = {in[0], w[0]};
  for (int i = 0; i < 2; ++i) {
    int64_t span = g.dilation[i] * (w[2 + i] - 1) + 1;
    int64_t size = in[2 + i] + 2 * g.padding[i] - span;
    if (size < 0)
      return op->emitOpError("kernel (extent ")
             << span << ") larger than the padded input ("
             << in[2 + i] + 2 * g.padding[i] << ")";
    out.push_back(size / g.strides[i] + 1);
  }
  return expectShape(op, output, out, "output");
}

static int64_t convFlops(Value output, Value weight) {
  auto w = shapeOf(weight);
  return saturatingProduct({2, numel(output), w[1], w[2], w[3]});
}

LogicalResult Conv2DOp::verify() {
  return verifyConv(*this, getInput(), getWeight(), getResult(),
                    {getStrides(), getPadding(), getDilation(),
                     static_cast<int64_t>(getGroups())});
}
LogicalResult Conv2DGradInputOp::verify() {
  return verifyConv(*this, getResult(), getWeight(), getGrad(),
                    {getStrides(), getPadding(), getDilation(),
                     static_cast<int64_t>(getGroups())});
}
LogicalResult Conv2DGradWeightOp::verify() {
  return verifyConv(*this, getInput(), getResult(), getGrad(),
                    {getStrides(), getPadding(), getDilation(),
                     static_cast<int64_t>(getGroups())});
}
bool Conv2DOp::isContraction() { return true; }
int64_t Conv2DOp::getFlops() { return convFlops(getResult(), getWeight()); }
bool Conv2DGradInputOp::isContraction() { return true; }
int64_t Conv2DGradInputOp::getFlops() {
  return convFlops(getGrad(), getWeight());
}
bool Conv2DGradWeightOp::isContraction() { return true; }
int64_t Conv2DGradWeightOp::getFlops() {
  return convFlops(getGrad(), getResult());
}

// The library that runs a convolution may need scratch: whatever the
// target recorded on the op.
static int64_t libraryWorkspace(Operation *op) {
  auto bytes = op->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr);
  return bytes ? std::max<int64_t>(bytes.getInt(), 0) : 0;
}
int64_t Conv2DOp::getWorkspaceBytes() { return libraryWorkspace(*this); }
int64_t Conv2DGradInputOp::getWorkspaceBytes() {
  return libraryWorkspace(*this);
}
int64_t Conv2DGradWeightOp::getWorkspaceBytes() {
  return libraryWorkspace(*this);
}

LogicalResult Conv2DOp::buildAdjoint(OpBuilder &b, Value dy,
                                     SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  // The weight gradient reads the saved input; build it first so the input
  // can die before the input gradient exists (as for matmul).
  Value dw = Conv2DGradWeightOp::create(
      b, loc, getWeight().getType(), dy, getInput(), getStridesAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr());
  Value dx = Conv2DGradInputOp::create(
      b, loc, getInput().getType(), dy, getWeight(), getStridesAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr());
  grads.append({dx, dw});
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling and upsampling
//===----------------------------------------------------------------------===//

static LogicalResult verifyPool(Operation *op, Value input, Value output,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> padding) {
  if (failed(verifySameElementType(op)) ||
      failed(expectRank(op, input, 4, "input [N, C, H, W]")))
    return failure();
  auto in = shapeOf(input);
  SmallVector<int64_t> out = {in[0], in[1]};
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || strides[i] < 1)
      return op->emitOpError("kernel and strides must be positive");
    if (padding[i] < 0 || 2 * padding[i] > kernel[i])
      return op->emitOpError("padding must be between 0 and half the kernel, "
                             "got ")
             << padding[i] << " for kernel " << kernel[i];
    int64_t size = in[2 + i] + 2 * padding[i] - kernel[i];
    if (size < 0)
      return op->emitOpError("kernel ")
             << kernel[i] << " larger than the padded input";
    out.push_back(size / strides[i] + 1);
  }
  return expectShape(op, output, out, "output");
}

LogicalResult MaxPool2DOp::verify() {
  return verifyPool(*this, getInput(), getResult(), getKernel(), getStrides(),
                    getPadding());
}
LogicalResult AvgPool2DOp::verify() {
  return verifyPool(*this, getInput(), getResult(), getKernel(), getStrides(),
                    getPadding());
}
LogicalResult MaxPool2DGradOp::verify() {
  if (failed(verifyPool(*this, getInput(), getGrad(), getKernel(), getStrides(),
                        getPadding())))
    return failure();
  return success();
}
LogicalResult AvgPool2DGradOp::verify() {
  return verifyPool(*this, getResult(), getGrad(), getKernel(), getStrides(),
                    getPadding());
}
static int64_t window(ArrayRef<int64_t> kernel) {
  return kernel[0] * kernel[1];
}
int64_t MaxPool2DOp::getFlops() {
  return numel(getResult()) * window(getKernel());
}
int64_t AvgPool2DOp::getFlops() {
  return numel(getResult()) * window(getKernel());
}
int64_t MaxPool2DGradOp::getFlops() {
  return 2 * numel(getGrad()) * window(getKernel());
}
int64_t AvgPool2DGradOp::getFlops() {
  return numel(getGrad()) * window(getKernel());
}
LogicalResult MaxPool2DOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(MaxPool2DGradOp::create(b, getLoc(), dy, getInput(),
                                          getKernelAttr(), getStridesAttr(),
                                          getPaddingAttr()));
  return success();
}
LogicalResult AvgPool2DOp::buildAdjoint(OpBuilder &b, Value dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(AvgPool2DGradOp::create(b, getLoc(), getInput().getType(), dy,
                                          getKernelAttr(), getStridesAttr(),
                                          getPaddingAttr()));
  return success();
}

static LogicalResult verifyUpsample(Operation *op, Value small, Value large,
                                    int64_t scale) {
  if (failed(verifySameElementType(op)) ||
      failed(expectRank(op, small, 4, "input [N, C, H, W]")))
    return failure();
  if (scale < 1)
    return op->emitOpError("scale must be positive, got ") << scale;
  auto s = shapeOf(small);
  return expectShape(op, large, {s[0], s[1], s[2] * scale, s[3] * scale},
                     "upsampled");
}
LogicalResult UpsampleNearest2DOp::verify() {
  return verifyUpsample(*this, getInput(), getResult(), getScale());
}
LogicalResult UpsampleNearest2DGradOp::verify() {
  return verifyUpsample(*this, getResult(), getGrad(), getScale());
}
int64_t UpsampleNearest2DGradOp::getFlops() { return numel(getGrad()); }
LogicalResult UpsampleNearest2DOp::buildAdjoint(OpBuilder &b, Value dy,
                                                SmallVectorImpl<Value> &grads) {
  grads.push_back(UpsampleNearest2DGradOp::create(
      b, getLoc(), getInput().getType(), dy, getScaleAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Concat and slice
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  if (failed(verifySameElementType(*this)))
    return failure();
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  auto result = shapeOf(getResult());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(result.size()))
    return emitOpError("axis ")
           << axis << " out of range for rank " << result.size();
  int64_t total = 0;
  for (Value in : getInputs()) {
    auto s = shapeOf(in);
    SmallVector<int64_t> expected(result);
    if (s.size() == result.size())
      expected[axis] = s[axis];
    if (failed(expectShape(*this, in, expected, "input")))
      return failure();
    total += s[axis];
  }
  if (total != result[axis])
    return emitOpError("inputs add up to ")
           << total << " along axis " << axis << ", the result has "
           << result[axis];
  return success();
}
LogicalResult ConcatOp::buildAdjoint(OpBuilder &b, Value dy,
                                     SmallVectorImpl<Value> &grads) {
  int64_t offset = 0;
  for (Value in : getInputs()) {
    SmallVector<int64_t> offsets(shapeOf(in).size(), 0);
    offsets[getAxis()] = offset;
    offset += shapeOf(in)[getAxis()];
    grads.push_back(
        SliceOp::create(b, getLoc(), in.getType(), dy, offsets).getResult());
  }
  return success();
}

static LogicalResult verifySlice(Operation *op, Value full, Value part,
                                 ArrayRef<int64_t> offsets) {
  if (failed(verifySameElementType(op)))
    return failure();
  auto f = shapeOf(full), p = shapeOf(part);
  if (f.size() != p.size() || offsets.size() != f.size())
    return op->emitOpError("offsets, operand and result must have one rank");
  for (size_t i = 0; i < f.size(); ++i)
    if (offsets[i] < 0 || offsets[i] + p[i] > f[i])
      return op->emitOpError("block of size ")
             << p[i] << " at offset " << offsets[i] << " exceeds dimension "
             << i << " of size " << f[i];
  return success();
}
LogicalResult SliceOp::verify() {
  return verifySlice(*this, getInput(), getResult(), getOffsets());
}
LogicalResult SliceGradOp::verify() {
  return verifySlice(*this, getResult(), getGrad(), getOffsets());
}
LogicalResult SliceOp::buildAdjoint(OpBuilder &b, Value dy,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(
      SliceGradOp::create(b, getLoc(), getInput().getType(), dy, getOffsets()));
  return success();
}
