//===- TrainNNToLinalg.cpp - Lower CNN and transformer ops ----------------===//
//
// The same contract as the MLP ops: every op allocates exactly its result
// and nothing else. Ops whose inputs are affine in the iteration space are
// linalg.generic; convolution and pooling windows read through clamped
// tensor.extract and select (padding reads nothing); ops that need row
// statistics (softmax, normalizations, cross-entropy) and scatters are scf
// loops on tensors with scalar accumulators, which bufferize in place into
// the result, so no temporary tensor exists.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::train;
using namespace mlir::arith;

namespace {
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

class NNLowering {
public:
  NNLowering(OpBuilder &b, Operation *op) : b(b), op(op), loc(op->getLoc()) {}
  Value lower();

private:
  RankedTensorType resultType() {
    return cast<RankedTensorType>(op->getResult(0).getType());
  }
  static ArrayRef<int64_t> shape(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  static unsigned rank(Value v) { return shape(v).size(); }
  FloatType floatType() {
    return cast<FloatType>(resultType().getElementType());
  }
  Value fconst(OpBuilder &nb, double v) {
    return ConstantOp::create(nb, loc, nb.getFloatAttr(floatType(), v));
  }
  Value fconst(double v) { return fconst(b, v); }
  /// 1 / (1 + exp(-v)), as train.sigmoid, silu and mish compute it.
  Value sigmoid(OpBuilder &nb, Location l, Value v) {
    Value one = fconst(nb, 1.0);
    Value e = math::ExpOp::create(nb, l, NegFOp::create(nb, l, v));
    return DivFOp::create(nb, l, one, AddFOp::create(nb, l, one, e));
  }
  Value iconst(OpBuilder &nb, int64_t v) {
    return ConstantIndexOp::create(nb, loc, v);
  }
  Value empty(RankedTensorType type) {
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  }
  Value filled(RankedTensorType type, double v) {
    return linalg::FillOp::create(b, loc, fconst(v), empty(type)).getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<unsigned> results) {
    SmallVector<AffineExpr> exprs;
    for (unsigned r : results)
      exprs.push_back(b.getAffineDimExpr(r));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }
  AffineMap identity(unsigned n) { return b.getMultiDimIdentityMap(n); }
  /// The map reading an operand broadcast to `target` (NumPy rules).
  AffineMap broadcastMap(ArrayRef<int64_t> from, ArrayRef<int64_t> target) {
    SmallVector<AffineExpr> exprs;
    unsigned lead = target.size() - from.size();
    for (unsigned i = 0; i < from.size(); ++i)
      exprs.push_back(from[i] == 1 && target[lead + i] != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(lead + i));
    return AffineMap::get(target.size(), 0, exprs, b.getContext());
  }
  static SmallVector<utils::IteratorType> iterators(unsigned parallel,
                                                    unsigned reduction = 0) {
    SmallVector<utils::IteratorType> its(parallel,
                                         utils::IteratorType::parallel);
    its.append(reduction, utils::IteratorType::reduction);
    return its;
  }
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> its, BodyFn body) {
    return linalg::GenericOp::create(
               b, loc, init.getType(), inputs, init, maps, its,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }
  /// Elementwise over the result's shape, operands broadcast.
  Value elementwise(ValueRange inputs, BodyFn body) {
    auto out = resultType().getShape();
    SmallVector<AffineMap> maps;
    for (Value in : inputs)
      maps.push_back(broadcastMap(shape(in), out));
    maps.push_back(identity(out.size()));
    return generic(inputs, empty(resultType()), maps, iterators(out.size()),
                   body);
  }
  /// The result computed element by element from the loop indices (the
  /// result's, then `reduction` more), the body reading operands itself and
  /// folding into an accumulator that starts at `init`. Without reduction
  /// loops this is a linalg.generic; with them, whose ranges no operand map
  /// gives, scf loops with a scalar accumulator.
  Value indexed(double init, ArrayRef<int64_t> reduction,
                function_ref<Value(OpBuilder &, ValueRange, Value)> body) {
    unsigned n = resultType().getRank();
    if (reduction.empty())
      return generic({}, empty(resultType()), {identity(n)}, iterators(n),
                     [&](OpBuilder &nb, Location nl, ValueRange args) {
                       SmallVector<Value> ivs;
                       for (unsigned d = 0; d < n; ++d)
                         ivs.push_back(linalg::IndexOp::create(nb, nl, d));
                       return body(nb, ivs, args[0]);
                     });
    return parallelLoop(b, resultType().getShape(), empty(resultType()),
                        [&](OpBuilder &nb, ValueRange outer, Value t) {
                          Value acc = reduceLoop(
                              nb, reduction, fconst(nb, init),
                              [&](OpBuilder &ib, ValueRange inner, Value a) {
                                SmallVector<Value> ivs(outer);
                                llvm::append_range(ivs, inner);
                                return body(ib, ivs, a);
                              });
                          return insert(nb, acc, t, outer);
                        });
  }

  // scf helpers: loops with iteration arguments (tensors or scalars).
  // A Parallel nest's iterations write disjoint parts of the result, and a
  // Reduction nest only folds values into scalar accumulators: the GPU
  // lowering may run the iterations of either as threads.
  enum class Nest { Serial, Parallel, Reduction };
  SmallVector<Value>
  loops(OpBuilder &nb, ArrayRef<int64_t> bounds, ValueRange inits,
        function_ref<SmallVector<Value>(OpBuilder &, ValueRange, ValueRange)>
            body,
        Nest kind = Nest::Serial) {
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t bound : bounds) {
      lbs.push_back(iconst(nb, 0));
      ubs.push_back(iconst(nb, bound));
      steps.push_back(iconst(nb, 1));
    }
    if (bounds.empty())
      return body(nb, {}, inits);
    auto nest = scf::buildLoopNest(
        nb, loc, lbs, ubs, steps, inits,
        [&](OpBuilder &ib, Location, ValueRange ivs, ValueRange args) {
          return scf::ValueVector(body(ib, ivs, args));
        });
    if (kind != Nest::Serial)
      for (scf::ForOp loop : nest.loops)
        loop->setAttr(kind == Nest::Parallel ? kParallelLoopAttr
                                             : kReductionLoopAttr,
                      nb.getUnitAttr());
    return SmallVector<Value>(nest.results);
  }
  Value loop1(OpBuilder &nb, ArrayRef<int64_t> bounds, Value init,
              function_ref<Value(OpBuilder &, ValueRange, Value)> body,
              Nest kind = Nest::Serial) {
    return loops(
        nb, bounds, init,
        [&](OpBuilder &ib, ValueRange ivs, ValueRange args) {
          return SmallVector<Value>{body(ib, ivs, args[0])};
        },
        kind)[0];
  }
  /// Marks the nest as writing disjoint elements of its result.
  Value parallelLoop(OpBuilder &nb, ArrayRef<int64_t> bounds, Value init,
                     function_ref<Value(OpBuilder &, ValueRange, Value)> body) {
    return loop1(nb, bounds, init, body, Nest::Parallel);
  }
  /// A scalar fold over `bounds`, marked as a reduction.
  Value reduceLoop(OpBuilder &nb, ArrayRef<int64_t> bounds, Value init,
                   function_ref<Value(OpBuilder &, ValueRange, Value)> body) {
    return loop1(nb, bounds, init, body, Nest::Reduction);
  }
  Value extract(OpBuilder &nb, Value t, ValueRange idx) {
    return tensor::ExtractOp::create(nb, loc, t, idx);
  }
  Value insert(OpBuilder &nb, Value v, Value t, ValueRange idx) {
    return tensor::InsertOp::create(nb, loc, v, t, idx);
  }
  /// An integer label or index as an `index`, checked against [0, bound).
  Value checkedIndex(OpBuilder &nb, Value raw, int64_t bound, StringRef what) {
    Value i = IndexCastOp::create(nb, loc, nb.getIndexType(), raw);
    Value lo = CmpIOp::create(nb, loc, CmpIPredicate::sge, i, iconst(nb, 0));
    Value hi =
        CmpIOp::create(nb, loc, CmpIPredicate::slt, i, iconst(nb, bound));
    cf::AssertOp::create(nb, loc, AndIOp::create(nb, loc, lo, hi),
                         nb.getStringAttr(what));
    return i;
  }
  /// `iv * stride + k * dilation - pad` and whether it lies in [0, size);
  /// the index is clamped so that the read is always in bounds.
  std::pair<Value, Value> window(OpBuilder &nb, Value iv, Value k,
                                 int64_t stride, int64_t dilation, int64_t pad,
                                 int64_t size) {
    Value pos =
        AddIOp::create(nb, loc, MulIOp::create(nb, loc, iv, iconst(nb, stride)),
                       MulIOp::create(nb, loc, k, iconst(nb, dilation)));
    pos = SubIOp::create(nb, loc, pos, iconst(nb, pad));
    return clampIndex(nb, pos, size);
  }
  std::pair<Value, Value> clampIndex(OpBuilder &nb, Value pos, int64_t size) {
    Value ok = AndIOp::create(
        nb, loc,
        CmpIOp::create(nb, loc, CmpIPredicate::sge, pos, iconst(nb, 0)),
        CmpIOp::create(nb, loc, CmpIPredicate::slt, pos, iconst(nb, size)));
    Value clamped = MaxSIOp::create(
        nb, loc, MinSIOp::create(nb, loc, pos, iconst(nb, size - 1)),
        iconst(nb, 0));
    return {clamped, ok};
  }

  Value lowerBinary();
  Value lowerSumTo(SumToOp sumTo);
  Value lowerReduce(Value input, ArrayRef<int64_t> dims, double scale);
  Value lowerBroadcast(BroadcastOp bc);
  Value lowerUnary();
  Value unaryFn(OpBuilder &nb, Location l, UnaryKind kind,
                std::optional<double> alpha, Value x);
  Value unaryDerivative(OpBuilder &nb, Location l, UnaryKind kind,
                        std::optional<double> alpha, Value x);
  Value lowerReshape(ReshapeOp reshape);
  Value lowerBatchMatmul(BatchMatmulOp mm);
  Value lowerRowwise();
  Value lowerNorm();
  Value lowerCrossEntropy();
  Value lowerEmbedding();
  Value lowerDropout(DropoutOp dropout);
  Value lowerConv();
  Value lowerConvLoops();
  Value lowerPool();
  Value lowerUpsample();
  Value lowerConcatSlice();

  OpBuilder &b;
  Operation *op;
  Location loc;
};
} // namespace

Value NNLowering::lowerBinary() {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  return elementwise({lhs, rhs},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       if (isa<AddOp>(op))
                         return AddFOp::create(nb, l, a[0], a[1]);
                       if (isa<SubOp>(op))
                         return SubFOp::create(nb, l, a[0], a[1]);
                       if (isa<MulOp>(op))
                         return MulFOp::create(nb, l, a[0], a[1]);
                       return DivFOp::create(nb, l, a[0], a[1]);
                     });
}

Value NNLowering::lowerSumTo(SumToOp sumTo) {
  // Iterate over the operand; the result is read and written through the
  // broadcast map (constant 0 on broadcast dimensions).
  auto in = shape(sumTo.getInput());
  SmallVector<utils::IteratorType> its;
  auto out = resultType().getShape();
  unsigned lead = in.size() - out.size();
  for (unsigned i = 0; i < in.size(); ++i)
    its.push_back(i < lead || (out[i - lead] == 1 && in[i] != 1)
                      ? utils::IteratorType::reduction
                      : utils::IteratorType::parallel);
  // linalg wants the output map to be a projected permutation, so reduce
  // into the squeezed shape and expand it back (a view, no copy).
  SmallVector<int64_t> kept;
  SmallVector<unsigned> keptDims;
  for (unsigned i = lead; i < in.size(); ++i)
    if (its[i] == utils::IteratorType::parallel) {
      kept.push_back(in[i]);
      keptDims.push_back(i);
    }
  auto squeezed = RankedTensorType::get(kept, floatType());
  Value sum = generic({sumTo.getInput()}, filled(squeezed, 0.0),
                      {identity(in.size()), map(in.size(), keptDims)}, its,
                      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        return AddFOp::create(nb, l, a[0], a[1]);
                      });
  return expandTo(b, loc, sum, resultType());
}

Value NNLowering::lowerReduce(Value input, ArrayRef<int64_t> dims,
                              double scale) {
  unsigned n = rank(input);
  SmallVector<unsigned> kept, order;
  for (unsigned i = 0; i < n; ++i)
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      kept.push_back(i);
  SmallVector<utils::IteratorType> its;
  for (unsigned i = 0; i < n; ++i)
    its.push_back(llvm::is_contained(kept, i) ? utils::IteratorType::parallel
                                              : utils::IteratorType::reduction);
  Value factor = fconst(scale);
  return generic(
      {input}, filled(resultType(), 0.0), {identity(n), map(n, kept)}, its,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value x = scale == 1.0
                      ? a[0]
                      : MulFOp::create(nb, l, a[0], factor).getResult();
        return AddFOp::create(nb, l, a[1], x);
      });
}

Value NNLowering::lowerBroadcast(BroadcastOp bc) {
  unsigned n = resultType().getRank();
  SmallVector<unsigned> kept;
  for (unsigned i = 0; i < n; ++i)
    if (!llvm::is_contained(bc.getDims(), static_cast<int64_t>(i)))
      kept.push_back(i);
  double scale = bc.getScale().convertToDouble();
  Value factor = fconst(scale);
  return generic({bc.getInput()}, empty(resultType()),
                 {map(n, kept), identity(n)}, iterators(n),
                 [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   if (scale == 1.0)
                     return a[0];
                   return MulFOp::create(nb, l, a[0], factor);
                 });
}

static std::optional<double> toDouble(std::optional<APFloat> v) {
  if (!v)
    return std::nullopt;
  return v->convertToDouble();
}

/// train.unary's functions, as PyTorch's CPU kernels define them.
Value NNLowering::unaryFn(OpBuilder &nb, Location l, UnaryKind kind,
                          std::optional<double> alpha, Value x) {
  Value zero = fconst(nb, 0.0), one = fconst(nb, 1.0);
  auto mul = [&](Value p, Value q) { return MulFOp::create(nb, l, p, q); };
  auto add = [&](Value p, Value q) { return AddFOp::create(nb, l, p, q); };
  auto gt = [&](Value p, Value q) {
    return CmpFOp::create(nb, l, CmpFPredicate::OGT, p, q);
  };
  // min(max(x + 3, 0), 6): hardswish's and hardsigmoid's ramp.
  auto ramp = [&]() {
    return MinimumFOp::create(
               nb, l, MaximumFOp::create(nb, l, add(x, fconst(nb, 3.0)), zero),
               fconst(nb, 6.0))
        .getResult();
  };
  auto softplus = [&](Value v) {
    return math::Log1pOp::create(nb, l, math::ExpOp::create(nb, l, v))
        .getResult();
  };
  switch (kind) {
  case UnaryKind::exp:
    return math::ExpOp::create(nb, l, x);
  case UnaryKind::log:
    return math::LogOp::create(nb, l, x);
  case UnaryKind::sqrt:
    return math::SqrtOp::create(nb, l, x);
  case UnaryKind::rsqrt:
    return DivFOp::create(nb, l, one, math::SqrtOp::create(nb, l, x));
  case UnaryKind::abs:
    return math::AbsFOp::create(nb, l, x);
  case UnaryKind::sin:
    return math::SinOp::create(nb, l, x);
  case UnaryKind::cos:
    return math::CosOp::create(nb, l, x);
  case UnaryKind::erf:
    return math::ErfOp::create(nb, l, x);
  case UnaryKind::pow:
    return math::PowFOp::create(nb, l, x, fconst(nb, *alpha));
  case UnaryKind::silu:
    return mul(x, sigmoid(nb, l, x));
  case UnaryKind::hardswish:
    return DivFOp::create(nb, l, mul(x, ramp()), fconst(nb, 6.0));
  case UnaryKind::hardsigmoid:
    return DivFOp::create(nb, l, ramp(), fconst(nb, 6.0));
  case UnaryKind::mish:
    return mul(x, math::TanhOp::create(nb, l, softplus(x)));
  case UnaryKind::softplus:
    return SelectOp::create(nb, l, gt(x, fconst(nb, 20.0)), x, softplus(x));
  case UnaryKind::leaky_relu:
    return SelectOp::create(nb, l, gt(x, zero), x, mul(x, fconst(nb, *alpha)));
  case UnaryKind::elu:
    return SelectOp::create(
        nb, l, gt(x, zero), x,
        mul(fconst(nb, *alpha), math::ExpM1Op::create(nb, l, x)));
  }
  llvm_unreachable("unknown unary kind");
}

/// f'(x) for train.unary_grad, with PyTorch's choices at kinks.
Value NNLowering::unaryDerivative(OpBuilder &nb, Location l, UnaryKind kind,
                                  std::optional<double> alpha, Value x) {
  Value zero = fconst(nb, 0.0), one = fconst(nb, 1.0);
  auto mul = [&](Value p, Value q) { return MulFOp::create(nb, l, p, q); };
  auto cmp = [&](CmpFPredicate pred, Value p, double q) {
    return CmpFOp::create(nb, l, pred, p, fconst(nb, q));
  };
  switch (kind) {
  case UnaryKind::exp:
    return math::ExpOp::create(nb, l, x);
  case UnaryKind::log:
    return DivFOp::create(nb, l, one, x);
  case UnaryKind::sqrt:
    return DivFOp::create(nb, l, fconst(nb, 0.5),
                          math::SqrtOp::create(nb, l, x));
  case UnaryKind::rsqrt: {
    Value r = DivFOp::create(nb, l, one, math::SqrtOp::create(nb, l, x));
    return mul(fconst(nb, -0.5), mul(r, mul(r, r)));
  }
  case UnaryKind::abs:
    return SelectOp::create(nb, l, cmp(CmpFPredicate::OGT, x, 0.0), one,
                            SelectOp::create(nb, l,
                                             cmp(CmpFPredicate::OLT, x, 0.0),
                                             fconst(nb, -1.0), zero));
  case UnaryKind::sin:
    return math::CosOp::create(nb, l, x);
  case UnaryKind::cos:
    return NegFOp::create(nb, l, math::SinOp::create(nb, l, x));
  case UnaryKind::erf:
    return mul(fconst(nb, 2.0 / std::sqrt(M_PI)),
               math::ExpOp::create(nb, l, NegFOp::create(nb, l, mul(x, x))));
  case UnaryKind::pow:
    if (*alpha == 0.0)
      return zero;
    return mul(fconst(nb, *alpha),
               math::PowFOp::create(nb, l, x, fconst(nb, *alpha - 1.0)));
  case UnaryKind::silu: {
    Value s = sigmoid(nb, l, x);
    return mul(
        s, AddFOp::create(nb, l, one, mul(x, SubFOp::create(nb, l, one, s))));
  }
  case UnaryKind::hardswish: {
    Value mid = AddFOp::create(nb, l, DivFOp::create(nb, l, x, fconst(nb, 3.0)),
                               fconst(nb, 0.5));
    Value upper =
        SelectOp::create(nb, l, cmp(CmpFPredicate::OLE, x, 3.0), mid, one);
    return SelectOp::create(nb, l, cmp(CmpFPredicate::OLT, x, -3.0), zero,
                            upper);
  }
  case UnaryKind::hardsigmoid: {
    Value inside = AndIOp::create(nb, l, cmp(CmpFPredicate::OGT, x, -3.0),
                                  cmp(CmpFPredicate::OLT, x, 3.0));
    // PyTorch's kernel scales by the float 1/6 in every precision; f64
    // gradients match it only with the same constant.
    return SelectOp::create(nb, l, inside,
                            fconst(nb, static_cast<double>(1.0f / 6.0f)), zero);
  }
  case UnaryKind::mish: {
    Value sp = math::Log1pOp::create(nb, l, math::ExpOp::create(nb, l, x));
    Value t = math::TanhOp::create(nb, l, sp);
    Value dt =
        mul(mul(x, sigmoid(nb, l, x)), SubFOp::create(nb, l, one, mul(t, t)));
    return AddFOp::create(nb, l, t, dt);
  }
  case UnaryKind::softplus: {
    Value z = math::ExpOp::create(nb, l, x);
    Value d = DivFOp::create(nb, l, z, AddFOp::create(nb, l, z, one));
    return SelectOp::create(nb, l, cmp(CmpFPredicate::OGT, x, 20.0), one, d);
  }
  case UnaryKind::leaky_relu:
    return SelectOp::create(nb, l, cmp(CmpFPredicate::OGT, x, 0.0), one,
                            fconst(nb, *alpha));
  case UnaryKind::elu:
    return SelectOp::create(
        nb, l, cmp(CmpFPredicate::OGT, x, 0.0), one,
        mul(fconst(nb, *alpha), math::ExpOp::create(nb, l, x)));
  }
  llvm_unreachable("unknown unary kind");
}

Value NNLowering::lowerUnary() {
  double invSqrt2 = 1.0 / std::sqrt(2.0);
  double invSqrt2Pi = 1.0 / std::sqrt(2.0 * M_PI);
  auto body = [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    Value one = fconst(nb, 1.0);
    auto phiCdf = [&](Value x) {
      Value e = math::ErfOp::create(
          nb, l, MulFOp::create(nb, l, x, fconst(nb, invSqrt2)));
      return MulFOp::create(nb, l, AddFOp::create(nb, l, one, e),
                            fconst(nb, 0.5))
          .getResult();
    };
    if (auto clamp = dyn_cast<ClampOp>(op)) {
      Value lo = fconst(nb, clamp.getMin().convertToDouble());
      Value hi = fconst(nb, clamp.getMax().convertToDouble());
      return MinimumFOp::create(nb, l, MaximumFOp::create(nb, l, a[0], lo), hi);
    }
    if (auto grad = dyn_cast<ClampGradOp>(op)) {
      Value lo = fconst(nb, grad.getMin().convertToDouble());
      Value hi = fconst(nb, grad.getMax().convertToDouble());
      Value inside = AndIOp::create(
          nb, l, CmpFOp::create(nb, l, CmpFPredicate::OGT, a[1], lo),
          CmpFOp::create(nb, l, CmpFPredicate::OLT, a[1], hi));
      return SelectOp::create(nb, l, inside, a[0], fconst(nb, 0.0));
    }
    if (isa<TanhOp>(op))
      return math::TanhOp::create(nb, l, a[0]);
    if (isa<TanhGradOp>(op)) {
      Value sq = MulFOp::create(nb, l, a[1], a[1]);
      return MulFOp::create(nb, l, a[0], SubFOp::create(nb, l, one, sq));
    }
    if (isa<SigmoidOp>(op))
      return sigmoid(nb, l, a[0]);
    if (isa<SigmoidGradOp>(op)) {
      Value d = MulFOp::create(nb, l, a[1], SubFOp::create(nb, l, one, a[1]));
      return MulFOp::create(nb, l, a[0], d);
    }
    if (isa<GeluOp>(op))
      return MulFOp::create(nb, l, a[0], phiCdf(a[0]));
    if (isa<GeluGradOp>(op)) {
      Value x = a[1];
      Value half =
          MulFOp::create(nb, l, MulFOp::create(nb, l, x, x), fconst(nb, -0.5));
      Value pdf = MulFOp::create(nb, l, math::ExpOp::create(nb, l, half),
                                 fconst(nb, invSqrt2Pi));
      Value d = AddFOp::create(nb, l, phiCdf(x), MulFOp::create(nb, l, x, pdf));
      return MulFOp::create(nb, l, a[0], d);
    }
    if (auto u = dyn_cast<UnaryMathOp>(op))
      return unaryFn(nb, l, u.getKind(), toDouble(u.getAlpha()), a[0]);
    if (auto u = dyn_cast<UnaryMathGradOp>(op))
      return MulFOp::create(
          nb, l, a[0],
          unaryDerivative(nb, l, u.getKind(), toDouble(u.getAlpha()), a[1]));
    if (isa<CausalMaskOp, CausalMaskGradOp>(op)) {
      unsigned n = resultType().getRank();
      Value i = linalg::IndexOp::create(nb, l, n - 2);
      Value j = linalg::IndexOp::create(nb, l, n - 1);
      Value above = CmpIOp::create(nb, l, CmpIPredicate::ugt, j, i);
      double fill = isa<CausalMaskOp>(op)
                        ? -std::numeric_limits<double>::infinity()
                        : 0.0;
      return SelectOp::create(nb, l, above, fconst(nb, fill), a[0]);
    }
    // div_rhs_grad: -grad * lhs / (rhs * rhs)
    Value num = MulFOp::create(nb, l, a[0], a[1]);
    Value den = MulFOp::create(nb, l, a[2], a[2]);
    return NegFOp::create(nb, l, DivFOp::create(nb, l, num, den));
  };
  return elementwise(op->getOperands(), body);
}

Value NNLowering::lowerReshape(ReshapeOp reshape) {
  // Views (collapse to 1-D, expand to the result) then one copy: the copy's
  // destination is the op's only allocation.
  Value flat = collapseToVector(b, loc, reshape.getInput());
  Value view = expandTo(b, loc, flat, resultType());
  return linalg::CopyOp::create(b, loc, view, empty(resultType())).getResult(0);
}

Value NNLowering::lowerBatchMatmul(BatchMatmulOp mm) {
  // (d0, d1, d2, d3) = (batch, m, n, k)
  AffineMap lhs = mm.getTransposeLhs() ? map(4, {0, 3, 1}) : map(4, {0, 1, 3});
  AffineMap rhs = mm.getTransposeRhs() ? map(4, {0, 2, 3}) : map(4, {0, 3, 2});
  return generic({mm.getLhs(), mm.getRhs()}, filled(resultType(), 0.0),
                 {lhs, rhs, map(4, {0, 1, 2})}, iterators(3, 1),
                 [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   Value p = MulFOp::create(nb, l, a[0], a[1]);
                   return AddFOp::create(nb, l, a[2], p);
                 });
}

/// Softmax, log-softmax and their gradients: scf loops over the rows,
/// scalar reductions along the last dimension, then one write pass.
Value NNLowering::lowerRowwise() {
  Value x = op->getOperand(0);
  auto full = shape(x);
  ArrayRef<int64_t> rows = full.drop_back();
  int64_t width = full.back();
  Value saved = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
  double negInf = -std::numeric_limits<double>::infinity();
  return parallelLoop(
      b, rows, empty(resultType()),
      [&](OpBuilder &nb, ValueRange row, Value out) {
        auto at = [&](ValueRange j) {
          SmallVector<Value> idx(row);
          idx.push_back(j[0]);
          return idx;
        };
        auto rowSum = [&](double init,
                          function_ref<Value(OpBuilder &, Value, Value)> f) {
          return reduceLoop(nb, {width}, fconst(nb, init),
                            [&](OpBuilder &ib, ValueRange j, Value acc) {
                              return f(ib, acc, j[0]);
                            });
        };
        Value mx, sum;
        if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
          mx = rowSum(negInf, [&](OpBuilder &ib, Value acc, Value j) -> Value {
            return MaximumFOp::create(ib, loc, acc, extract(ib, x, at(j)));
          });
          sum = rowSum(0.0, [&](OpBuilder &ib, Value acc, Value j) -> Value {
            Value d = SubFOp::create(ib, loc, extract(ib, x, at(j)), mx);
            return AddFOp::create(ib, loc, acc,
                                  math::ExpOp::create(ib, loc, d));
          });
        } else if (isa<SoftmaxGradOp>(op)) {
          sum = rowSum(0.0, [&](OpBuilder &ib, Value acc, Value j) -> Value {
            Value p = MulFOp::create(ib, loc, extract(ib, x, at(j)),
                                     extract(ib, saved, at(j)));
            return AddFOp::create(ib, loc, acc, p);
          });
        } else {
          sum = rowSum(0.0, [&](OpBuilder &ib, Value acc, Value j) -> Value {
            return AddFOp::create(ib, loc, acc, extract(ib, x, at(j)));
          });
        }
        Value logSum = isa<LogSoftmaxOp>(op)
                           ? math::LogOp::create(nb, loc, sum).getResult()
                           : Value();
        return parallelLoop(
            nb, {width}, out, [&](OpBuilder &ib, ValueRange j, Value t) {
              Value v = extract(ib, x, at(j));
              Value r;
              if (isa<SoftmaxOp>(op))
                r = DivFOp::create(ib, loc,
                                   math::ExpOp::create(
                                       ib, loc, SubFOp::create(ib, loc, v, mx)),
                                   sum);
              else if (isa<LogSoftmaxOp>(op))
                r = SubFOp::create(ib, loc, SubFOp::create(ib, loc, v, mx),
                                   logSum);
              else if (isa<SoftmaxGradOp>(op)) {
                Value y = extract(ib, saved, at(j));
                r = MulFOp::create(ib, loc, y, SubFOp::create(ib, loc, v, sum));
              } else {
                Value p =
                    math::ExpOp::create(ib, loc, extract(ib, saved, at(j)));
                r = SubFOp::create(ib, loc, v, MulFOp::create(ib, loc, p, sum));
              }
              return insert(ib, r, t, at(j));
            });
      });
}

/// Layer and batch normalization: loops over the kept dimensions (rows for
/// layer_norm, channels for batch_norm), statistics over the others.
Value NNLowering::lowerNorm() {
  bool batch =
      isa<BatchNormOp, BatchNormGradInputOp, BatchNormGradWeightOp>(op);
  bool gradInput = isa<LayerNormGradInputOp, BatchNormGradInputOp>(op);
  bool gradWeight = isa<LayerNormGradWeightOp, BatchNormGradWeightOp>(op);
  bool forward = !gradInput && !gradWeight;
  Value x = forward ? op->getOperand(0) : op->getOperand(1);
  Value dy = forward ? Value() : op->getOperand(0);
  Value weight = forward     ? op->getOperand(1)
                 : gradInput ? op->getOperand(2)
                             : Value();
  Value bias = forward ? op->getOperand(2) : Value();
  double eps = cast<FloatAttr>(op->getAttr("epsilon")).getValueAsDouble();
  auto full = shape(x);
  unsigned n = full.size();
  unsigned paramDim = batch ? 1 : n - 1;
  SmallVector<unsigned> keptDims, statDims;
  for (unsigned i = 0; i < n; ++i)
    ((batch ? i == 1 : i != n - 1) ? keptDims : statDims).push_back(i);
  SmallVector<int64_t> keptBounds, statBounds;
  for (unsigned d : keptDims)
    keptBounds.push_back(full[d]);
  for (unsigned d : statDims)
    statBounds.push_back(full[d]);
  double count = 1;
  for (int64_t s : statBounds)
    count *= static_cast<double>(s);

  // Indices of the input from kept and statistics indices.
  auto indexOf = [&](ValueRange kept, ValueRange stat) {
    SmallVector<Value> idx(n);
    for (auto [k, d] : llvm::enumerate(keptDims))
      idx[d] = kept[k];
    for (auto [k, d] : llvm::enumerate(statDims))
      idx[d] = stat[k];
    return idx;
  };
  // Mean and 1/std over the statistics dimensions at `kept`.
  auto rowStats = [&](OpBuilder &nb, ValueRange kept) {
    auto reduce = [&](Value init,
                      function_ref<Value(OpBuilder &, ValueRange, Value)> f) {
      return reduceLoop(nb, statBounds, init, f);
    };
    Value inv = fconst(nb, 1.0 / count);
    Value mean = MulFOp::create(
        nb, loc,
        reduce(fconst(nb, 0.0),
               [&](OpBuilder &ib, ValueRange s, Value acc) -> Value {
                 return AddFOp::create(ib, loc, acc,
                                       extract(ib, x, indexOf(kept, s)));
               }),
        inv);
    Value var = MulFOp::create(
        nb, loc,
        reduce(fconst(nb, 0.0),
               [&](OpBuilder &ib, ValueRange s, Value acc) -> Value {
                 Value d = SubFOp::create(
                     ib, loc, extract(ib, x, indexOf(kept, s)), mean);
                 return AddFOp::create(ib, loc, acc,
                                       MulFOp::create(ib, loc, d, d));
               }),
        inv);
    Value rstd = DivFOp::create(
        nb, loc, fconst(nb, 1.0),
        math::SqrtOp::create(nb, loc,
                             AddFOp::create(nb, loc, var, fconst(nb, eps))));
    return std::make_pair(mean, rstd);
  };

  if (gradWeight && !batch) {
    // Layer norm's weight gradient sums over rows. One pass writes each
    // row's mean and 1/std to scratch (a thread per row on a GPU), a second
    // sums over rows in order per weight element (a thread per element):
    // the op's workspace (getWorkspaceBytes). The result is allocated
    // first, so that the two are live together as the memory model counts
    // them.
    Value out = empty(resultType());
    SmallVector<int64_t> scratchShape(keptBounds);
    scratchShape.push_back(2);
    auto statAt = [&](OpBuilder &nb, ValueRange kept, int64_t which) {
      SmallVector<Value> idx(kept);
      idx.push_back(iconst(nb, which));
      return idx;
    };
    Value stats = parallelLoop(
        b, keptBounds, empty(RankedTensorType::get(scratchShape, floatType())),
        [&](OpBuilder &nb, ValueRange kept, Value t) {
          auto [mean, rstd] = rowStats(nb, kept);
          t = insert(nb, mean, t, statAt(nb, kept, 0));
          return insert(nb, rstd, t, statAt(nb, kept, 1));
        });
    return parallelLoop(
        b, statBounds, out, [&](OpBuilder &nb, ValueRange stat, Value t) {
          Value sum = reduceLoop(
              nb, keptBounds, fconst(nb, 0.0),
              [&](OpBuilder &ib, ValueRange kept, Value acc) -> Value {
                SmallVector<Value> idx = indexOf(kept, stat);
                Value d =
                    SubFOp::create(ib, loc, extract(ib, x, idx),
                                   extract(ib, stats, statAt(ib, kept, 0)));
                Value xh = MulFOp::create(
                    ib, loc, d, extract(ib, stats, statAt(ib, kept, 1)));
                Value g = MulFOp::create(ib, loc, extract(ib, dy, idx), xh);
                return AddFOp::create(ib, loc, acc, g);
              });
          return insert(nb, sum, t, stat);
        });
  }

  Value init = gradWeight ? filled(resultType(), 0.0) : empty(resultType());
  // One iteration per kept index (row, or batch norm's channel); the only
  // weight gradient left here is batch norm's, whose channel is the kept
  // index, so every iteration writes its own elements.
  return loop1(
      b, keptBounds, init,
      [&](OpBuilder &nb, ValueRange kept, Value out) {
        auto at = [&](ValueRange stat) { return indexOf(kept, stat); };
        auto reduce = [&](ValueRange inits,
                          function_ref<SmallVector<Value>(
                              OpBuilder &, ValueRange, ValueRange)>
                              f) {
          return loops(nb, statBounds, inits, f, Nest::Reduction);
        };
        Value inv = fconst(nb, 1.0 / count);
        auto [mean, rstd] = rowStats(nb, kept);
        auto xhat = [&](OpBuilder &ib, ValueRange s) -> Value {
          Value d = SubFOp::create(ib, loc, extract(ib, x, at(s)), mean);
          return MulFOp::create(ib, loc, d, rstd);
        };
        auto param = [&](OpBuilder &ib, Value t, ValueRange s) {
          return extract(ib, t, {at(s)[paramDim]});
        };
        if (forward)
          return parallelLoop(
              nb, statBounds, out, [&](OpBuilder &ib, ValueRange s, Value t) {
                Value y = AddFOp::create(
                    ib, loc,
                    MulFOp::create(ib, loc, xhat(ib, s), param(ib, weight, s)),
                    param(ib, bias, s));
                return insert(ib, y, t, at(s));
              });
        if (gradWeight) {
          // Batch norm's: the channel's sum in a register, added to the
          // zero-filled result once (the same sums, in the same order, as
          // accumulating in the result).
          Value p = kept[0];
          Value sum =
              reduceLoop(nb, statBounds, fconst(nb, 0.0),
                         [&](OpBuilder &ib, ValueRange s, Value acc) -> Value {
                           Value g = MulFOp::create(
                               ib, loc, extract(ib, dy, at(s)), xhat(ib, s));
                           return AddFOp::create(ib, loc, acc, g);
                         });
          return insert(nb, AddFOp::create(nb, loc, extract(nb, out, {p}), sum),
                        out, {p});
        }
        // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight.
        auto sums = reduce(
            {fconst(nb, 0.0), fconst(nb, 0.0)},
            [&](OpBuilder &ib, ValueRange s, ValueRange acc) {
              Value g = MulFOp::create(ib, loc, extract(ib, dy, at(s)),
                                       param(ib, weight, s));
              Value gx = MulFOp::create(ib, loc, g, xhat(ib, s));
              return SmallVector<Value>{AddFOp::create(ib, loc, acc[0], g),
                                        AddFOp::create(ib, loc, acc[1], gx)};
            });
        Value meanG = MulFOp::create(nb, loc, sums[0], inv);
        Value meanGX = MulFOp::create(nb, loc, sums[1], inv);
        return parallelLoop(
            nb, statBounds, out, [&](OpBuilder &ib, ValueRange s, Value t) {
              Value g = MulFOp::create(ib, loc, extract(ib, dy, at(s)),
                                       param(ib, weight, s));
              Value r = SubFOp::create(ib, loc, g, meanG);
              r = SubFOp::create(ib, loc, r,
                                 MulFOp::create(ib, loc, xhat(ib, s), meanGX));
              return insert(ib, MulFOp::create(ib, loc, r, rstd), t, at(s));
            });
      },
      Nest::Parallel);
}

Value NNLowering::lowerCrossEntropy() {
  Value logits = op->getOperand(0), labels = op->getOperand(1);
  int64_t rows = shape(logits)[0], classes = shape(logits)[1];
  bool grad = isa<CrossEntropyGradOp>(op);
  double negInf = -std::numeric_limits<double>::infinity();
  Value invRows = fconst(1.0 / static_cast<double>(rows));
  // Row statistics: the maximum and the sum of exponentials.
  auto stats = [&](OpBuilder &nb, Value i) {
    auto at = [&](Value j) { return SmallVector<Value>{i, j}; };
    Value mx = reduceLoop(nb, {classes}, fconst(nb, negInf),
                          [&](OpBuilder &ib, ValueRange j, Value acc) -> Value {
                            return MaximumFOp::create(
                                ib, loc, acc, extract(ib, logits, at(j[0])));
                          });
    Value sum = reduceLoop(
        nb, {classes}, fconst(nb, 0.0),
        [&](OpBuilder &ib, ValueRange j, Value acc) -> Value {
          Value d = SubFOp::create(ib, loc, extract(ib, logits, at(j[0])), mx);
          return AddFOp::create(ib, loc, acc, math::ExpOp::create(ib, loc, d));
        });
    Value label = checkedIndex(nb, extract(nb, labels, {i}), classes,
                               "cross_entropy: label out of range");
    return std::make_tuple(mx, sum, label);
  };
  if (!grad) {
    // Each row's term in parallel (a thread per row on a GPU) into scratch,
    // then their sum in row order: the op's workspace (getWorkspaceBytes).
    // The result is allocated first, so that the two are live together as
    // the memory model counts them.
    Value out = empty(resultType());
    Value terms = parallelLoop(
        b, {rows}, empty(RankedTensorType::get({rows}, floatType())),
        [&](OpBuilder &nb, ValueRange i, Value t) {
          auto [mx, sum, label] = stats(nb, i[0]);
          Value lse =
              AddFOp::create(nb, loc, mx, math::LogOp::create(nb, loc, sum));
          Value picked = extract(nb, logits, {i[0], label});
          return insert(nb, SubFOp::create(nb, loc, lse, picked), t, i);
        });
    // The sum accumulates in the result, not in a register: on a GPU the
    // scratch is freed between the sum and the scaling, which then run in
    // kernels of their own.
    Value total = loop1(b, {rows}, insert(b, fconst(0.0), out, {}),
                        [&](OpBuilder &nb, ValueRange i, Value t) {
                          Value sum =
                              AddFOp::create(nb, loc, extract(nb, t, {}),
                                             extract(nb, terms, i));
                          return insert(nb, sum, t, {});
                        });
    return insert(b, MulFOp::create(b, loc, extract(b, total, {}), invRows),
                  total, {});
  }
  return parallelLoop(
      b, {rows}, empty(resultType()),
      [&](OpBuilder &nb, ValueRange i, Value out) {
        auto [mx, sum, label] = stats(nb, i[0]);
        // Read the loss gradient inside the row loop (a kernel on a GPU).
        Value scale = MulFOp::create(
            nb, loc, invRows, extract(nb, op->getOperand(2), ValueRange{}));
        return parallelLoop(
            nb, {classes}, out, [&](OpBuilder &ib, ValueRange j, Value t) {
              Value v = extract(ib, logits, {i[0], j[0]});
              Value p = DivFOp::create(
                  ib, loc,
                  math::ExpOp::create(ib, loc, SubFOp::create(ib, loc, v, mx)),
                  sum);
              Value hit =
                  CmpIOp::create(ib, loc, CmpIPredicate::eq, j[0], label);
              Value d =
                  SubFOp::create(ib, loc, p,
                                 SelectOp::create(ib, loc, hit, fconst(ib, 1.0),
                                                  fconst(ib, 0.0)));
              return insert(ib, MulFOp::create(ib, loc, d, scale), t,
                            {i[0], j[0]});
            });
      });
}

Value NNLowering::lowerEmbedding() {
  if (auto emb = dyn_cast<EmbeddingOp>(op)) {
    int64_t vocab = shape(emb.getTable())[0];
    unsigned n = resultType().getRank();
    return indexed(0.0, {}, [&](OpBuilder &nb, ValueRange ivs, Value) -> Value {
      Value raw = extract(nb, emb.getIndices(), ivs.drop_back());
      Value row = checkedIndex(nb, raw, vocab, "embedding: index out of range");
      return extract(nb, emb.getTable(), {row, ivs[n - 1]});
    });
  }
  auto grad = cast<EmbeddingGradOp>(op);
  int64_t vocab = resultType().getDimSize(0);
  // A scatter-add: tokens repeat, so rows of the table are written by many
  // tokens, but each feature column only by its own: the columns are
  // parallel (threads on a GPU), each accumulating the tokens in order.
  auto gradShape = shape(grad.getGrad());
  return parallelLoop(
      b, gradShape.take_back(), filled(resultType(), 0.0),
      [&](OpBuilder &cb, ValueRange col, Value column) {
        return loop1(cb, gradShape.drop_back(), column,
                     [&](OpBuilder &nb, ValueRange tok, Value t) {
                       Value raw = extract(nb, grad.getIndices(), tok);
                       Value row = checkedIndex(
                           nb, raw, vocab, "embedding: index out of range");
                       SmallVector<Value> at = {row, col[0]};
                       SmallVector<Value> from(tok);
                       from.push_back(col[0]);
                       Value sum =
                           AddFOp::create(nb, loc, extract(nb, t, at),
                                          extract(nb, grad.getGrad(), from));
                       return insert(nb, sum, t, at);
                     });
      });
}

/// Philox4x32-10 (Salmon et al., SC'11) on counter (i, offset), key seed;
/// the first output word decides element i.
Value NNLowering::lowerDropout(DropoutOp dropout) {
  double p = dropout.getProbability().convertToDouble();
  auto type = resultType();
  unsigned n = type.getRank();
  Value keepScale = fconst(p == 0 ? 1.0 : 1.0 / (1.0 - p));
  // Seed and offset are inputs read in the body, not scalars extracted
  // before it: on a GPU the body runs in a kernel and the host cannot read
  // device memory.
  AffineMap scalar = AffineMap::get(n, 0, b.getContext());
  return generic(
      {dropout.getInput(), dropout.getSeed(), dropout.getOffset()}, empty(type),
      {identity(n), scalar, scalar, identity(n)}, iterators(n),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value seed = a[1], offset = a[2];
        Type i32 = nb.getI32Type(), i64 = nb.getI64Type();
        auto c32 = [&](uint32_t v) -> Value {
          return ConstantOp::create(nb, l, nb.getI32IntegerAttr(v));
        };
        auto c64 = [&](int64_t v) -> Value {
          return ConstantOp::create(nb, l, nb.getI64IntegerAttr(v));
        };
        auto lo = [&](Value v) -> Value {
          return TruncIOp::create(nb, l, i32, v);
        };
        auto hi = [&](Value v) -> Value {
          return TruncIOp::create(nb, l, i32,
                                  ShRUIOp::create(nb, l, v, c64(32)));
        };
        // Row-major linear index of the element.
        Value linear = c64(0);
        for (unsigned d = 0; d < n; ++d) {
          Value iv = IndexCastOp::create(nb, l, i64,
                                         linalg::IndexOp::create(nb, l, d));
          linear = AddIOp::create(
              nb, l, MulIOp::create(nb, l, linear, c64(type.getDimSize(d))),
              iv);
        }
        Value c[4] = {lo(linear), hi(linear), lo(offset), hi(offset)};
        Value k0 = lo(seed), k1 = hi(seed);
        for (int round = 0; round < 10; ++round) {
          auto m0 = MulUIExtendedOp::create(nb, l, c32(0xD2511F53u), c[0]);
          auto m1 = MulUIExtendedOp::create(nb, l, c32(0xCD9E8D57u), c[2]);
          Value n0 = XOrIOp::create(
              nb, l, XOrIOp::create(nb, l, m1.getHigh(), c[1]), k0);
          Value n2 = XOrIOp::create(
              nb, l, XOrIOp::create(nb, l, m0.getHigh(), c[3]), k1);
          c[0] = n0;
          c[1] = m1.getLow();
          c[2] = n2;
          c[3] = m0.getLow();
          k0 = AddIOp::create(nb, l, k0, c32(0x9E3779B9u));
          k1 = AddIOp::create(nb, l, k1, c32(0xBB67AE85u));
        }
        // 24 random bits -> [0, 1), exactly representable in f32 and f64.
        Value bits = ShRUIOp::create(nb, l, c[0], c32(8));
        // The draw is compared in f32 (f64 for f64 tensors), so that f16 and
        // bf16 tensors get the same mask as f32 ones.
        FloatType drawType =
            floatType().isF64() ? nb.getF64Type() : nb.getF32Type();
        auto drawConst = [&](double v) {
          return ConstantOp::create(nb, l, nb.getFloatAttr(drawType, v));
        };
        Value u = MulFOp::create(nb, l, UIToFPOp::create(nb, l, drawType, bits),
                                 drawConst(1.0 / 16777216.0));
        Value keep = CmpFOp::create(nb, l, CmpFPredicate::OGE, u, drawConst(p));
        Value scaled = MulFOp::create(nb, l, a[0], keepScale);
        return SelectOp::create(nb, l, keep, scaled, fconst(nb, 0.0));
      });
}

Value NNLowering::lowerConv() {
  Value result = lowerConvLoops();
  // Tag the nest for the CPU target's kernels (see kConvAttr).
  int32_t kind = isa<Conv2DOp>(op) ? 0 : isa<Conv2DGradInputOp>(op) ? 1 : 2;
  SmallVector<int64_t> window;
  for (StringRef name : {"strides", "padding", "dilation"})
    llvm::append_range(window,
                       cast<DenseI64ArrayAttr>(op->getAttr(name)).asArrayRef());
  // (stride h, stride w, pad h, pad w, dilation h, dilation w) then groups.
  window.push_back(cast<IntegerAttr>(op->getAttr("groups")).getInt());
  // Every parallel loop of the nest carries the tag: canonicalization after
  // bufferization inlines a loop of one iteration (a batch of 1), and the
  // loop left outermost must still say what the nest computes.
  auto tag = b.getDictionaryAttr(
      {b.getNamedAttr("kind", b.getI32IntegerAttr(kind)),
       b.getNamedAttr("window", b.getDenseI64ArrayAttr(window))});
  for (auto loop = result.getDefiningOp<scf::ForOp>();
       loop && loop->hasAttr(kParallelLoopAttr);) {
    loop->setAttr(kConvAttr, tag);
    auto inner = loop.getBody()->getOps<scf::ForOp>();
    loop = inner.empty() ? scf::ForOp() : *inner.begin();
  }
  return result;
}

Value NNLowering::lowerConvLoops() {
  auto strides = cast<DenseI64ArrayAttr>(op->getAttr("strides")).asArrayRef();
  auto padding = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
  auto dilation = cast<DenseI64ArrayAttr>(op->getAttr("dilation")).asArrayRef();
  int64_t groups = cast<IntegerAttr>(op->getAttr("groups")).getInt();
  Value zero = fconst(0.0);
  auto fma = [&](OpBuilder &nb, Value acc, Value x, Value w, Value ok) {
    Value prod = MulFOp::create(nb, loc, x, w);
    return AddFOp::create(nb, loc, acc,
                          SelectOp::create(nb, loc, ok, prod, zero))
        .getResult();
  };
  auto andAll = [&](OpBuilder &nb, ArrayRef<Value> conds) {
    Value r = conds[0];
    for (Value c : conds.drop_front())
      r = AndIOp::create(nb, loc, r, c);
    return r;
  };
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    auto in = shape(conv.getInput()), w = shape(conv.getWeight());
    int64_t fPerGroup = w[0] / groups, cPerGroup = w[1];
    // (n, f, oh, ow | c, kh, kw)
    return indexed(
        0.0, {cPerGroup, w[2], w[3]},
        [&](OpBuilder &nb, ValueRange iv, Value acc) {
          Value group = DivUIOp::create(nb, loc, iv[1], iconst(nb, fPerGroup));
          Value ci = AddIOp::create(
              nb, loc, MulIOp::create(nb, loc, group, iconst(nb, cPerGroup)),
              iv[4]);
          auto [ih, okH] = window(nb, iv[2], iv[5], strides[0], dilation[0],
                                  padding[0], in[2]);
          auto [iw, okW] = window(nb, iv[3], iv[6], strides[1], dilation[1],
                                  padding[1], in[3]);
          Value x = extract(nb, conv.getInput(), {iv[0], ci, ih, iw});
          Value wt =
              extract(nb, conv.getWeight(), {iv[1], iv[4], iv[5], iv[6]});
          return fma(nb, acc, x, wt, andAll(nb, {okH, okW}));
        });
  }
  if (auto grad = dyn_cast<Conv2DGradWeightOp>(op)) {
    auto in = shape(grad.getInput()), dy = shape(grad.getGrad());
    int64_t fPerGroup = resultType().getDimSize(0) / groups;
    int64_t cPerGroup = resultType().getDimSize(1);
    // (f, c, kh, kw | n, oh, ow)
    return indexed(
        0.0, {dy[0], dy[2], dy[3]},
        [&](OpBuilder &nb, ValueRange iv, Value acc) {
          Value group = DivUIOp::create(nb, loc, iv[0], iconst(nb, fPerGroup));
          Value ci = AddIOp::create(
              nb, loc, MulIOp::create(nb, loc, group, iconst(nb, cPerGroup)),
              iv[1]);
          auto [ih, okH] = window(nb, iv[5], iv[2], strides[0], dilation[0],
                                  padding[0], in[2]);
          auto [iw, okW] = window(nb, iv[6], iv[3], strides[1], dilation[1],
                                  padding[1], in[3]);
          Value x = extract(nb, grad.getInput(), {iv[4], ci, ih, iw});
          Value g = extract(nb, grad.getGrad(), {iv[4], iv[0], iv[5], iv[6]});
          return fma(nb, acc, x, g, andAll(nb, {okH, okW}));
        });
  }
  auto grad = cast<Conv2DGradInputOp>(op);
  auto dy = shape(grad.getGrad()), w = shape(grad.getWeight());
  int64_t fPerGroup = w[0] / groups, cPerGroup = w[1];
  // (n, ci, ih, iw | fl, kh, kw): output position oh = (ih + pad - kh dil) /
  // stride when that divides exactly and lies in range.
  auto source = [&](OpBuilder &nb, Value i, Value k, int dim) {
    Value num = SubIOp::create(
        nb, loc, AddIOp::create(nb, loc, i, iconst(nb, padding[dim])),
        MulIOp::create(nb, loc, k, iconst(nb, dilation[dim])));
    Value s = iconst(nb, strides[dim]);
    Value exact =
        CmpIOp::create(nb, loc, CmpIPredicate::eq,
                       RemSIOp::create(nb, loc, num, s), iconst(nb, 0));
    auto [o, ok] =
        clampIndex(nb, DivSIOp::create(nb, loc, num, s), dy[2 + dim]);
    Value nonNegative =
        CmpIOp::create(nb, loc, CmpIPredicate::sge, num, iconst(nb, 0));
    return std::make_pair(o, andAll(nb, {exact, ok, nonNegative}));
  };
  return indexed(
      0.0, {fPerGroup, w[2], w[3]},
      [&](OpBuilder &nb, ValueRange iv, Value acc) {
        Value group = DivUIOp::create(nb, loc, iv[1], iconst(nb, cPerGroup));
        Value c = RemUIOp::create(nb, loc, iv[1], iconst(nb, cPerGroup));
        Value f = AddIOp::create(
            nb, loc, MulIOp::create(nb, loc, group, iconst(nb, fPerGroup)),
            iv[4]);
        auto [oh, okH] = source(nb, iv[2], iv[5], 0);
        auto [ow, okW] = source(nb, iv[3], iv[6], 1);
        Value g = extract(nb, grad.getGrad(), {iv[0], f, oh, ow});
        Value wt = extract(nb, grad.getWeight(), {f, c, iv[5], iv[6]});
        return fma(nb, acc, g, wt, andAll(nb, {okH, okW}));
      });
}

Value NNLowering::lowerPool() {
  auto kernel = cast<DenseI64ArrayAttr>(op->getAttr("kernel")).asArrayRef();
  auto strides = cast<DenseI64ArrayAttr>(op->getAttr("strides")).asArrayRef();
  auto padding = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
  double negInf = -std::numeric_limits<double>::infinity();
  double inv = 1.0 / static_cast<double>(kernel[0] * kernel[1]);
  if (isa<MaxPool2DOp, AvgPool2DOp>(op)) {
    Value input = op->getOperand(0);
    auto in = shape(input);
    bool isMax = isa<MaxPool2DOp>(op);
    Value pad = fconst(isMax ? negInf : 0.0);
    Value scale = fconst(inv);
    // (n, c, oh, ow | kh, kw)
    return indexed(isMax ? negInf : 0.0, kernel,
                   [&](OpBuilder &nb, ValueRange iv, Value acc) -> Value {
                     auto [ih, okH] = window(nb, iv[2], iv[4], strides[0], 1,
                                             padding[0], in[2]);
                     auto [iw, okW] = window(nb, iv[3], iv[5], strides[1], 1,
                                             padding[1], in[3]);
                     Value x = extract(nb, input, {iv[0], iv[1], ih, iw});
                     Value ok = AndIOp::create(nb, loc, okH, okW);
                     Value v = SelectOp::create(nb, loc, ok, x, pad);
                     if (isMax)
                       return MaximumFOp::create(nb, loc, acc, v);
                     return AddFOp::create(nb, loc, acc,
                                           MulFOp::create(nb, loc, v, scale));
                   });
  }
  // Gradients: a scatter over the windows into the zeroed input gradient.
  Value dy = op->getOperand(0);
  Value input = isa<MaxPool2DGradOp>(op) ? op->getOperand(1) : Value();
  auto in = resultType().getShape();
  auto dyShape = shape(dy);
  // Windows overlap only within one (n, c) plane: the planes are parallel
  // (threads on a GPU), each scattered in the original order.
  auto scatter = [&](OpBuilder &nb, ValueRange iv, Value t) -> Value {
    Value g = extract(nb, dy, iv);
    auto position = [&](OpBuilder &ib, ValueRange k) {
      auto [ih, okH] =
          window(ib, iv[2], k[0], strides[0], 1, padding[0], in[2]);
      auto [iw, okW] =
          window(ib, iv[3], k[1], strides[1], 1, padding[1], in[3]);
      return std::make_tuple(ih, iw,
                             AndIOp::create(ib, loc, okH, okW).getResult());
    };
    if (!input)
      return loop1(nb, kernel, t, [&](OpBuilder &ib, ValueRange k, Value acc) {
        auto [ih, iw, ok] = position(ib, k);
        SmallVector<Value> at = {iv[0], iv[1], ih, iw};
        Value add = MulFOp::create(ib, loc, g, fconst(ib, inv));
        Value sum = AddFOp::create(ib, loc, extract(ib, acc, at), add);
        Value v = SelectOp::create(ib, loc, ok, sum, extract(ib, acc, at));
        return insert(ib, v, acc, at);
      });
    // The first position (row-major) holding the window's maximum.
    auto best =
        loops(nb, kernel, {fconst(nb, negInf), iconst(nb, -1), iconst(nb, -1)},
              [&](OpBuilder &ib, ValueRange k, ValueRange acc) {
                auto [ih, iw, ok] = position(ib, k);
                Value x = extract(ib, input, {iv[0], iv[1], ih, iw});
                Value better = AndIOp::create(
                    ib, loc, ok,
                    CmpFOp::create(ib, loc, CmpFPredicate::OGT, x, acc[0]));
                // The first in-bounds position wins even at -inf.
                Value none = CmpIOp::create(ib, loc, CmpIPredicate::slt, acc[1],
                                            iconst(ib, 0));
                better = OrIOp::create(ib, loc, better,
                                       AndIOp::create(ib, loc, ok, none));
                return SmallVector<Value>{
                    SelectOp::create(ib, loc, better, x, acc[0]),
                    SelectOp::create(ib, loc, better, ih, acc[1]),
                    SelectOp::create(ib, loc, better, iw, acc[2])};
              });
    SmallVector<Value> at = {iv[0], iv[1], best[1], best[2]};
    Value sum = AddFOp::create(nb, loc, extract(nb, t, at), g);
    return insert(nb, sum, t, at);
  };
  return parallelLoop(
      b, dyShape.take_front(2), filled(resultType(), 0.0),
      [&](OpBuilder &nb, ValueRange nc, Value plane) {
        return loop1(nb, dyShape.drop_front(2), plane,
                     [&](OpBuilder &ib, ValueRange hw, Value t) {
                       return scatter(ib, {nc[0], nc[1], hw[0], hw[1]}, t);
                     });
      });
}

Value NNLowering::lowerUpsample() {
  int64_t s = cast<IntegerAttr>(op->getAttr("scale")).getInt();
  Value src = op->getOperand(0);
  if (isa<UpsampleNearest2DOp>(op))
    return indexed(0.0, {}, [&](OpBuilder &nb, ValueRange iv, Value) -> Value {
      Value h = DivUIOp::create(nb, loc, iv[2], iconst(nb, s));
      Value w = DivUIOp::create(nb, loc, iv[3], iconst(nb, s));
      return extract(nb, src, {iv[0], iv[1], h, w});
    });
  // (n, c, h, w | a, b): sum of the s x s block.
  return indexed(
      0.0, {s, s}, [&](OpBuilder &nb, ValueRange iv, Value acc) -> Value {
        auto pos = [&](Value i, Value k) {
          return AddIOp::create(nb, loc,
                                MulIOp::create(nb, loc, i, iconst(nb, s)), k);
        };
        Value g = extract(nb, src,
                          {iv[0], iv[1], pos(iv[2], iv[4]), pos(iv[3], iv[5])});
        return AddFOp::create(nb, loc, acc, g);
      });
}

Value NNLowering::lowerConcatSlice() {
  auto copyInto = [&](Value dest, Value block, ArrayRef<int64_t> offsets) {
    // extract_slice + copy + insert_slice of the same slice bufferize to a
    // copy into a view of `dest`.
    auto sizes = shape(block);
    SmallVector<OpFoldResult> offs, szs, ones;
    for (auto [o, s] : llvm::zip_equal(offsets, sizes)) {
      offs.push_back(b.getIndexAttr(o));
      szs.push_back(b.getIndexAttr(s));
      ones.push_back(b.getIndexAttr(1));
    }
    Value view = tensor::ExtractSliceOp::create(
        b, loc, cast<RankedTensorType>(block.getType()), dest, offs, szs, ones);
    Value copied = linalg::CopyOp::create(b, loc, block, view).getResult(0);
    return tensor::InsertSliceOp::create(b, loc, copied, dest, offs, szs, ones)
        .getResult();
  };
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    Value out = empty(resultType());
    SmallVector<int64_t> offsets(resultType().getRank(), 0);
    for (Value in : concat.getInputs()) {
      out = copyInto(out, in, offsets);
      offsets[concat.getAxis()] += shape(in)[concat.getAxis()];
    }
    return out;
  }
  if (auto grad = dyn_cast<SliceGradOp>(op))
    return copyInto(filled(resultType(), 0.0), grad.getGrad(),
                    grad.getOffsets());
  auto slice = cast<SliceOp>(op);
  SmallVector<OpFoldResult> offs, szs, ones;
  for (auto [o, s] :
       llvm::zip_equal(slice.getOffsets(), resultType().getShape())) {
    offs.push_back(b.getIndexAttr(o));
    szs.push_back(b.getIndexAttr(s));
    ones.push_back(b.getIndexAttr(1));
  }
  Value view = tensor::ExtractSliceOp::create(
      b, loc, resultType(), slice.getInput(), offs, szs, ones);
  return linalg::CopyOp::create(b, loc, view, empty(resultType())).getResult(0);
}

Value NNLowering::lower() {
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    return lowerBinary();
  if (auto s = dyn_cast<SumToOp>(op))
    return lowerSumTo(s);
  if (auto s = dyn_cast<SumOp>(op))
    return lowerReduce(s.getInput(), s.getDims(), 1.0);
  if (auto m = dyn_cast<MeanOp>(op))
    return lowerReduce(
        m.getInput(), m.getDims(),
        static_cast<double>(resultType().getNumElements()) /
            static_cast<double>(cast<RankedTensorType>(m.getInput().getType())
                                    .getNumElements()));
  if (auto bc = dyn_cast<BroadcastOp>(op))
    return lowerBroadcast(bc);
  if (isa<ClampOp, ClampGradOp, TanhOp, TanhGradOp, SigmoidOp, SigmoidGradOp,
          GeluOp, GeluGradOp, UnaryMathOp, UnaryMathGradOp, CausalMaskOp,
          CausalMaskGradOp, DivRhsGradOp>(op))
    return lowerUnary();
  if (auto r = dyn_cast<ReshapeOp>(op))
    return lowerReshape(r);
  if (auto c = dyn_cast<CastOp>(op)) {
    auto from = cast<FloatType>(c.getInput().getType().getElementType());
    bool widen = from.getWidth() < floatType().getWidth();
    return elementwise(c.getInput(),
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         // f16 <-> bf16 meet in f32, which holds both exactly.
                         // f64 -> bf16 also rounds through f32: the C runtime
                         // has no direct conversion, and the double rounding
                         // can differ from one rounding only on ties.
                         if (from.getWidth() == floatType().getWidth())
                           return TruncFOp::create(
                               nb, l, floatType(),
                               ExtFOp::create(nb, l, nb.getF32Type(), a[0]));
                         if (from.isF64() && floatType().isBF16())
                           return TruncFOp::create(
                               nb, l, floatType(),
                               TruncFOp::create(nb, l, nb.getF32Type(), a[0]));
                         if (widen)
                           return ExtFOp::create(nb, l, floatType(), a[0]);
                         return TruncFOp::create(nb, l, floatType(), a[0]);
                       });
  }
  if (auto t = dyn_cast<TransposeOp>(op))
    return linalg::TransposeOp::create(b, loc, t.getInput(),
                                       empty(resultType()), t.getPermutation())
        .getResult()[0];
  if (auto mm = dyn_cast<BatchMatmulOp>(op))
    return lowerBatchMatmul(mm);
  if (isa<SoftmaxOp, SoftmaxGradOp, LogSoftmaxOp, LogSoftmaxGradOp>(op))
    return lowerRowwise();
  if (isa<LayerNormOp, LayerNormGradInputOp, LayerNormGradWeightOp, BatchNormOp,
          BatchNormGradInputOp, BatchNormGradWeightOp>(op))
    return lowerNorm();
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
    return lowerCrossEntropy();
  if (isa<EmbeddingOp, EmbeddingGradOp>(op))
    return lowerEmbedding();
  if (auto d = dyn_cast<DropoutOp>(op))
    return lowerDropout(d);
  if (isa<Conv2DOp, Conv2DGradInputOp, Conv2DGradWeightOp>(op))
    return lowerConv();
  if (isa<MaxPool2DOp, AvgPool2DOp, MaxPool2DGradOp, AvgPool2DGradOp>(op))
    return lowerPool();
  if (isa<UpsampleNearest2DOp, UpsampleNearest2DGradOp>(op))
    return lowerUpsample();
  if (isa<ConcatOp, SliceOp, SliceGradOp>(op))
    return lowerConcatSlice();
  return Value();
}

Value mlir::remat::lowerNNOp(OpBuilder &b, Operation *op) {
  return NNLowering(b, op).lower();
}

Value mlir::remat::collapseToVector(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 1)
    return v;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  if (type.getRank() == 0)
    all.clear();
  auto flat =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flat, v, all);
  return tensor::CollapseShapeOp::create(b, loc, flat, v, all);
}

Value mlir::remat::expandTo(OpBuilder &b, Location loc, Value v,
                            RankedTensorType target) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type == target)
    return v;
  Value flat = collapseToVector(b, loc, v);
  if (target.getRank() == 1)
    return flat;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < target.getRank(); ++i)
    all[0].push_back(i);
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, flat,
                                           SmallVector<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(b, loc, target, flat, all);
}
