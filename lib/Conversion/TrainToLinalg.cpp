//===- TrainToLinalg.cpp - Lower train ops to linalg on tensors -----------===//
//
// One train op becomes a few linalg ops with a single fresh tensor, its
// result. The memory model depends on that: after one-shot bufferization,
// each train op allocates exactly what the simulator charged it. Ops are
// rewritten where they stand, so the order chosen by train-remat survives.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "remat/Conversion/Passes.h"
#include "remat/Conversion/TrainToLinalg.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::remat {
#define GEN_PASS_DEF_CONVERTTRAINTOLINALG
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::train;

namespace {
/// Builds the linalg form of one train op at the builder's position.
class Lowering {
public:
  Lowering(OpBuilder &b, Operation *op) : b(b), op(op), loc(op->getLoc()) {}

  Value lower();

private:
  RankedTensorType resultType() {
    return cast<RankedTensorType>(op->getResult(0).getType());
  }
  Type elementType() { return resultType().getElementType(); }
  Value constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType(), v));
  }
  Value empty(RankedTensorType type) {
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  }
  Value zeros(RankedTensorType type) {
    return linalg::FillOp::create(b, loc, constant(0.0), empty(type))
        .getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<unsigned> results) {
    SmallVector<AffineExpr> exprs;
    for (unsigned r : results)
      exprs.push_back(b.getAffineDimExpr(r));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }
  AffineMap identity(unsigned rank) { return b.getMultiDimIdentityMap(rank); }
  /// A linalg.generic writing `init`; `body` maps the scalar inputs and the
  /// current output element to the new output element.
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    auto g = linalg::GenericOp::create(
        b, loc, init.getType(), inputs, init, maps, iterators,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, body(nb, nl, args));
        });
    return g.getResult(0);
  }
  SmallVector<utils::IteratorType> parallel(unsigned rank) {
    return SmallVector<utils::IteratorType>(rank,
                                            utils::IteratorType::parallel);
  }
  /// Elementwise op over operands of the result's shape.
  Value elementwise(ValueRange inputs,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> f) {
    unsigned rank = resultType().getRank();
    SmallVector<AffineMap> maps(inputs.size() + 1, identity(rank));
    return generic(inputs, empty(resultType()), maps, parallel(rank), f);
  }

  Value lowerMatmul(MatmulOp mm);
  Value lowerOptimizerOp();
  /// An optimizer update over `operands` (tensors of the result's shape and
  /// 0-d scalars): `f` maps their elements, operands[0]'s first, to the
  /// result's. A donated argument in operands[0] is updated in its own
  /// buffer; any other value gets a fresh result like every other op.
  Value update(ArrayRef<Value> operands,
               function_ref<Value(OpBuilder &, Location, ValueRange)> f);

  OpBuilder &b;
  Operation *op;
  Location loc;
};
} // namespace

Value Lowering::lowerMatmul(MatmulOp mm) {
  // (d0, d1, d2) = (m, n, k); transposes only change the operand maps, so
  // no transposed copy is ever allocated.
  AffineMap lhs = mm.getTransposeLhs() ? map(3, {2, 0}) : map(3, {0, 2});
  AffineMap rhs = mm.getTransposeRhs() ? map(3, {1, 2}) : map(3, {2, 1});
  AffineMap out = map(3, {0, 1});
  SmallVector<Attribute> maps = {AffineMapAttr::get(lhs),
                                 AffineMapAttr::get(rhs),
                                 AffineMapAttr::get(out)};
  auto result = linalg::MatmulOp::create(
      b, loc, TypeRange{resultType()}, ValueRange{mm.getLhs(), mm.getRhs()},
      ValueRange{zeros(resultType())},
      {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))});
  return result.getResult(0);
}

Value Lowering::lower() {
  using namespace arith;
  if (auto mm = dyn_cast<MatmulOp>(op))
    return lowerMatmul(mm);
  if (auto add = dyn_cast<BiasAddOp>(op))
    return generic({add.getInput(), add.getBias()}, empty(resultType()),
                   {identity(2), map(2, {1}), identity(2)}, parallel(2),
                   [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                     return AddFOp::create(nb, l, a[0], a[1]);
                   });
  if (auto grad = dyn_cast<BiasGradOp>(op))
    return generic(
        {grad.getGrad()}, zeros(resultType()), {identity(2), map(2, {1})},
        {utils::IteratorType::reduction, utils::IteratorType::parallel},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return AddFOp::create(nb, l, a[0], a[1]);
        });
  if (auto relu = dyn_cast<ReluOp>(op)) {
    Value zero = constant(0.0);
    return elementwise({relu.getInput()},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return MaximumFOp::create(nb, l, a[0], zero);
                       });
  }
  if (auto grad = dyn_cast<ReluGradOp>(op)) {
    Value zero = constant(0.0);
    return elementwise({grad.getGrad(), grad.getOutput()},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value positive = CmpFOp::create(
                             nb, l, CmpFPredicate::OGT, a[1], zero);
                         return SelectOp::create(nb, l, positive, a[0], zero);
                       });
  }
  if (auto loss = dyn_cast<MseLossOp>(op)) {
    auto type = cast<RankedTensorType>(loss.getPrediction().getType());
    unsigned rank = type.getRank();
    Value scale = constant(1.0 / static_cast<double>(type.getNumElements()));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    return generic(
        {loss.getPrediction(), loss.getTarget()}, zeros(resultType()),
        {identity(rank), identity(rank),
         AffineMap::get(rank, 0, {}, b.getContext())},
        iterators, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value d = SubFOp::create(nb, l, a[0], a[1]);
          Value sq = MulFOp::create(nb, l, d, d);
          Value term = MulFOp::create(nb, l, sq, scale);
          return AddFOp::create(nb, l, a[2], term);
        });
  }
  if (auto grad = dyn_cast<MseLossGradOp>(op)) {
    unsigned rank = resultType().getRank();
    Value scale =
        constant(2.0 / static_cast<double>(resultType().getNumElements()));
    return generic(
        {grad.getPrediction(), grad.getTarget(), grad.getLossGrad()},
        empty(resultType()),
        {identity(rank), identity(rank),
         AffineMap::get(rank, 0, {}, b.getContext()), identity(rank)},
        parallel(rank), [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value d = SubFOp::create(nb, l, a[0], a[1]);
          Value s = MulFOp::create(nb, l, d, scale);
          return MulFOp::create(nb, l, s, a[2]);
        });
  }
  if (isa<SgdUpdateOp, MomentumUpdateOp, AdamMomentOp, AdamUpdateOp>(op))
    return lowerOptimizerOp();
  return lowerNNOp(b, op);
}

namespace {
/// Lowers one op kind with its family's lowering, keeping discardable marks
/// (train.recompute) on what replaces it, so that later passes can still
/// tell recomputations apart.
template <typename OpTy>
struct LowerTrainOp : public OpConversionPattern<OpTy> {
  using LowerFn = Value (*)(OpBuilder &, Operation *);
  LowerTrainOp(MLIRContext *context, LowerFn lower)
      : OpConversionPattern<OpTy>(context), lower(lower) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = lower(rewriter, op);
    if (!result)
      return rewriter.notifyMatchFailure(op, "no lowering for this form");
    if (Operation *def = result.getDefiningOp())
      for (NamedAttribute attr : op->getDiscardableAttrs())
        def->setAttr(attr.getName(), attr.getValue());
    rewriter.replaceOp(op, result);
    return success();
  }

  LowerFn lower;
};

template <typename... OpTys>
void addLowerings(RewritePatternSet &patterns,
                  Value (*lower)(OpBuilder &, Operation *)) {
  (patterns.add<LowerTrainOp<OpTys>>(patterns.getContext(), lower), ...);
}

Value Lowering::update(
    ArrayRef<Value> operands,
    function_ref<Value(OpBuilder &, Location, ValueRange)> f) {
  unsigned rank = resultType().getRank();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(cast<ShapedType>(v.getType()).getRank() == 0
                       ? AffineMap::get(rank, 0, {}, b.getContext())
                       : identity(rank));
  maps.push_back(identity(rank));
  if (!isa<BlockArgument>(operands[0]))
    return generic(operands, empty(resultType()), maps, parallel(rank),
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     return f(nb, l, a.drop_back());
                   });
  // outs = the argument: its element is the block's last argument.
  return generic(ArrayRef(operands).drop_front(), operands[0],
                 ArrayRef(maps).drop_front(), parallel(rank),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   SmallVector<Value> ordered = {a.back()};
                   llvm::append_range(ordered, a.drop_back());
                   return f(nb, l, ordered);
                 });
}

/// The optimizers, with torch.optim's formulas (TrainOptimizerOps.td).
Value Lowering::lowerOptimizerOp() {
  using namespace arith;
  Type et = elementType();
  auto c = [&](OpBuilder &nb, Location l, double v) -> Value {
    return ConstantOp::create(nb, l, nb.getFloatAttr(et, v));
  };
  // grad + wd * param, where wd is not 0.
  auto decayed = [&](OpBuilder &nb, Location l, Value g, Value p,
                     double wd) -> Value {
    if (wd == 0)
      return g;
    return AddFOp::create(nb, l, g, MulFOp::create(nb, l, c(nb, l, wd), p));
  };
  // The learning rate: the runtime operand's element, or the attribute.
  auto rate = [&](OpBuilder &nb, Location l, Value lrOperand, Value lrElement,
                  double attr) -> Value {
    return lrOperand ? lrElement : c(nb, l, attr);
  };
  // `step` (i64) as the element type.
  auto count = [&](OpBuilder &nb, Location l, Value step) -> Value {
    return SIToFPOp::create(nb, l, et, step);
  };

  if (auto sgd = dyn_cast<SgdUpdateOp>(op)) {
    SmallVector<Value> operands = {sgd.getParam(), sgd.getGrad()};
    if (sgd.getLr())
      operands.push_back(sgd.getLr());
    if (sgd.getBuffer())
      operands.push_back(sgd.getBuffer());
    double wd = sgd.getWeightDecay().convertToDouble();
    double momentum = sgd.getMomentum().convertToDouble();
    return update(operands, [&](OpBuilder &nb, Location l, ValueRange a) {
      Value p = a[0];
      Value d = decayed(nb, l, a[1], p, wd);
      unsigned next = 2;
      Value lr = rate(nb, l, sgd.getLr(), sgd.getLr() ? a[next++] : Value(),
                      sgd.getLearningRate().convertToDouble());
      if (sgd.getBuffer()) {
        Value buf = a[next];
        d = sgd.getNesterov()
                ? AddFOp::create(nb, l, d,
                                 MulFOp::create(nb, l, c(nb, l, momentum), buf))
                : buf;
      }
      return SubFOp::create(nb, l, p, MulFOp::create(nb, l, d, lr));
    });
  }
  if (auto mu = dyn_cast<MomentumUpdateOp>(op)) {
    double wd = mu.getWeightDecay().convertToDouble();
    double momentum = mu.getMomentum().convertToDouble();
    double dampening = mu.getDampening().convertToDouble();
    return update({mu.getBuffer(), mu.getGrad(), mu.getParam(), mu.getStep()},
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    Value d = decayed(nb, l, a[1], a[2], wd);
                    Value kept =
                        MulFOp::create(nb, l, c(nb, l, momentum), a[0]);
                    Value added =
                        MulFOp::create(nb, l, c(nb, l, 1 - dampening), d);
                    Value next = AddFOp::create(nb, l, kept, added);
                    Value first = CmpIOp::create(
                        nb, l, CmpIPredicate::sle, a[3],
                        ConstantOp::create(nb, l, nb.getI64IntegerAttr(1)));
                    return SelectOp::create(nb, l, first, d, next);
                  });
  }
  if (auto mo = dyn_cast<AdamMomentOp>(op)) {
    double wd = mo.getWeightDecay().convertToDouble();
    double beta = mo.getBeta().convertToDouble();
    bool square = mo.getSquare();
    return update({mo.getMoment(), mo.getGrad(), mo.getParam()},
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    Value d = decayed(nb, l, a[1], a[2], wd);
                    if (square)
                      d = MulFOp::create(nb, l, d, d);
                    Value kept = MulFOp::create(nb, l, c(nb, l, beta), a[0]);
                    Value added = MulFOp::create(nb, l, c(nb, l, 1 - beta), d);
                    return AddFOp::create(nb, l, kept, added);
                  });
  }
  auto adam = cast<AdamUpdateOp>(op);
  SmallVector<Value> operands = {adam.getParam(), adam.getExpAvg(),
                                 adam.getExpAvgSq(), adam.getStep()};
  if (adam.getLr())
    operands.push_back(adam.getLr());
  double beta1 = adam.getBeta1().convertToDouble();
  double beta2 = adam.getBeta2().convertToDouble();
  double eps = adam.getEps().convertToDouble();
  double wd = adam.getWeightDecay().convertToDouble();
  return update(operands, [&](OpBuilder &nb, Location l, ValueRange a) {
    Value lr = rate(nb, l, adam.getLr(), adam.getLr() ? a[4] : Value(),
                    adam.getLearningRate().convertToDouble());
    Value t = count(nb, l, a[3]);
    Value one = c(nb, l, 1);
    // 1 - beta^t
    auto correction = [&](double beta) -> Value {
      return SubFOp::create(nb, l, one,
                            math::PowFOp::create(nb, l, c(nb, l, beta), t));
    };
    Value p = a[0];
    if (wd != 0)
      p = MulFOp::create(
          nb, l, p,
          SubFOp::create(nb, l, one, MulFOp::create(nb, l, lr, c(nb, l, wd))));
    Value stepSize = DivFOp::create(nb, l, lr, correction(beta1));
    Value denom = AddFOp::create(
        nb, l,
        DivFOp::create(nb, l, math::SqrtOp::create(nb, l, a[2]),
                       math::SqrtOp::create(nb, l, correction(beta2))),
        c(nb, l, eps));
    Value delta =
        MulFOp::create(nb, l, stepSize, DivFOp::create(nb, l, a[1], denom));
    return SubFOp::create(nb, l, p, delta);
  });
}

Value lowerMLPOp(OpBuilder &b, Operation *op) {
  return Lowering(b, op).lower();
}
} // namespace

void mlir::remat::populateTrainElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<BiasAddOp, BiasGradOp, ReluOp, ReluGradOp>(patterns, lowerMLPOp);
  addLowerings<AddOp, SubOp, MulOp, DivOp, DivRhsGradOp, MaximumOp, MinimumOp,
               ExtremumGradOp, CompareOp, WhereOp, ClampOp, ClampGradOp, TanhOp,
               TanhGradOp, SigmoidOp, SigmoidGradOp, GeluOp, GeluGradOp,
               UnaryMathOp, UnaryMathGradOp, StopGradientOp, CastOp>(patterns,
                                                                     lowerNNOp);
}

void mlir::remat::populateTrainLayoutToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<SumToOp, SumOp, MeanOp, AmaxOp, AminOp, BroadcastOp, ReshapeOp,
               TransposeOp, ConcatOp, SliceOp, SliceGradOp>(patterns,
                                                            lowerNNOp);
}

void mlir::remat::populateTrainContractionToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<MatmulOp>(patterns, lowerMLPOp);
  addLowerings<BatchMatmulOp>(patterns, lowerNNOp);
}

void mlir::remat::populateTrainNormalizationToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<SoftmaxOp, SoftmaxGradOp, LogSoftmaxOp, LogSoftmaxGradOp,
               CausalMaskOp, CausalMaskGradOp, LayerNormOp,
               LayerNormGradInputOp, LayerNormGradWeightOp, BatchNormOp,
               BatchNormGradInputOp, BatchNormGradWeightOp>(patterns,
                                                            lowerNNOp);
}

void mlir::remat::populateTrainConvolutionToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<Conv2DOp, Conv2DGradInputOp, Conv2DGradWeightOp, MaxPool2DOp,
               AvgPool2DOp, MaxPool2DGradOp, AvgPool2DGradOp,
               UpsampleNearest2DOp, UpsampleNearest2DGradOp>(patterns,
                                                             lowerNNOp);
}

void mlir::remat::populateTrainLossAndRandomToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<MseLossOp, MseLossGradOp, SgdUpdateOp, MomentumUpdateOp,
               AdamMomentOp, AdamUpdateOp>(patterns, lowerMLPOp);
  addLowerings<CrossEntropyOp, CrossEntropyGradOp, EmbeddingOp, EmbeddingGradOp,
               DropoutOp>(patterns, lowerNNOp);
}

void mlir::remat::populateTrainToLinalgPatterns(RewritePatternSet &patterns) {
  populateTrainElementwiseToLinalgPatterns(patterns);
  populateTrainLayoutToLinalgPatterns(patterns);
  populateTrainContractionToLinalgPatterns(patterns);
  populateTrainNormalizationToLinalgPatterns(patterns);
  populateTrainConvolutionToLinalgPatterns(patterns);
  populateTrainLossAndRandomToLinalgPatterns(patterns);
}

void mlir::remat::configureTrainToLinalgTarget(ConversionTarget &target) {
  target.addIllegalDialect<TrainDialect>();
  target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect,
                         scf::SCFDialect, cf::ControlFlowDialect>();
}

namespace {
struct ConvertTrainToLinalgPass
    : public mlir::remat::impl::ConvertTrainToLinalgBase<
          ConvertTrainToLinalgPass> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    configureTrainToLinalgTarget(target);
    // Everything but train ops stays as it is (partial conversion); every
    // train op must lower.
    RewritePatternSet patterns(&getContext());
    populateTrainToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
