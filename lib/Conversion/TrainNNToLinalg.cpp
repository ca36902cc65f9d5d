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

#include "NNLowering.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

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
                       if (isa<MaximumOp>(op))
                         return MaximumFOp::create(nb, l, a[0], a[1]);
                       if (isa<MinimumOp>(op))
                         return MinimumFOp::create(nb, l, a[0], a[1]);
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

Value NNLowering::lowerCompare(CompareOp cmp) {
  bool isFloat = isa<FloatType>(
      cast<RankedTensorType>(cmp.getLhs().getType()).getElementType());
  auto [fp, ip] = [&]() -> std::pair<CmpFPredicate, CmpIPredicate> {
    // Ordered float predicates except `ne`: NaN compares unequal.
    switch (cmp.getPredicate()) {
    case ComparePredicate::eq:
      return {CmpFPredicate::OEQ, CmpIPredicate::eq};
    case ComparePredicate::ne:
      return {CmpFPredicate::UNE, CmpIPredicate::ne};
    case ComparePredicate::lt:
      return {CmpFPredicate::OLT, CmpIPredicate::slt};
    case ComparePredicate::le:
      return {CmpFPredicate::OLE, CmpIPredicate::sle};
    case ComparePredicate::gt:
      return {CmpFPredicate::OGT, CmpIPredicate::sgt};
    case ComparePredicate::ge:
      return {CmpFPredicate::OGE, CmpIPredicate::sge};
    }
    llvm_unreachable("unknown predicate");
  }();
  return elementwise(
      {cmp.getLhs(), cmp.getRhs()},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value c = isFloat ? CmpFOp::create(nb, l, fp, a[0], a[1]).getResult()
                          : CmpIOp::create(nb, l, ip, a[0], a[1]).getResult();
        return SelectOp::create(nb, l, c, fconst(nb, 1.0), fconst(nb, 0.0));
      });
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
  // amax and amin start from the identity of their fold, -inf or +inf.
  bool max = isa<AmaxOp>(op), min = isa<AminOp>(op);
  double inf = std::numeric_limits<double>::infinity();
  double init = max ? -inf : min ? inf : 0.0;
  return generic(
      {input}, filled(resultType(), init), {identity(n), map(n, kept)}, its,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        if (max)
          return MaximumFOp::create(nb, l, a[1], a[0]);
        if (min)
          return MinimumFOp::create(nb, l, a[1], a[0]);
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
    if (auto e = dyn_cast<ExtremumGradOp>(op)) {
      // PyTorch's rule: nothing to the operand that lost, half on a tie,
      // everything otherwise (NaN included).
      Value lost = CmpFOp::create(
          nb, l, e.getMinimum() ? CmpFPredicate::OGT : CmpFPredicate::OLT, a[1],
          a[2]);
      Value tie = CmpFOp::create(nb, l, CmpFPredicate::OEQ, a[1], a[2]);
      Value half = MulFOp::create(nb, l, a[0], fconst(nb, 0.5));
      return SelectOp::create(nb, l, lost, fconst(nb, 0.0),
                              SelectOp::create(nb, l, tie, half, a[0]));
    }
    if (isa<WhereOp>(op)) {
      Value pick =
          CmpFOp::create(nb, l, CmpFPredicate::UNE, a[0], fconst(nb, 0.0));
      return SelectOp::create(nb, l, pick, a[1], a[2]);
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
Value NNLowering::lower() {
  if (isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp>(op))
    return lowerBinary();
  if (auto c = dyn_cast<CompareOp>(op))
    return lowerCompare(c);
  if (auto s = dyn_cast<SumToOp>(op))
    return lowerSumTo(s);
  if (auto s = dyn_cast<SumOp>(op))
    return lowerReduce(s.getInput(), s.getDims(), 1.0);
  if (isa<AmaxOp, AminOp>(op))
    return lowerReduce(op->getOperand(0),
                       op->getAttrOfType<DenseI64ArrayAttr>("dims"), 1.0);
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
          CausalMaskGradOp, DivRhsGradOp, ExtremumGradOp, WhereOp>(op))
    return lowerUnary();
  if (auto r = dyn_cast<ReshapeOp>(op))
    return lowerReshape(r);
  if (isa<StopGradientOp>(op))
    return linalg::CopyOp::create(b, loc, op->getOperand(0),
                                  empty(resultType()))
        .getResult(0);
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
