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

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
  if (auto sgd = dyn_cast<SgdUpdateOp>(op)) {
    unsigned rank = resultType().getRank();
    Value lr = constant(sgd.getLearningRate().convertToDouble());
    // A donated argument is updated in its own buffer (outs = param); any
    // other param value gets a fresh result like every other op.
    bool inPlace = isa<BlockArgument>(sgd.getParam());
    auto update = [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      Value step = MulFOp::create(nb, l, a[1], lr);
      return SubFOp::create(nb, l, a[0], step);
    };
    if (inPlace)
      return generic({sgd.getGrad()}, sgd.getParam(),
                     {identity(rank), identity(rank)}, parallel(rank),
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       return update(nb, l, {a[1], a[0]});
                     });
    return elementwise({sgd.getParam(), sgd.getGrad()}, update);
  }
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

Value lowerMLPOp(OpBuilder &b, Operation *op) { return Lowering(b, op).lower(); }
} // namespace

void mlir::remat::populateTrainElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<BiasAddOp, BiasGradOp, ReluOp, ReluGradOp>(patterns,
                                                          lowerMLPOp);
  addLowerings<AddOp, SubOp, MulOp, DivOp, DivRhsGradOp, ClampOp, ClampGradOp,
               TanhOp, TanhGradOp, SigmoidOp, SigmoidGradOp, GeluOp,
               GeluGradOp, UnaryMathOp, UnaryMathGradOp, CastOp>(patterns,
                                                                 lowerNNOp);
}

void mlir::remat::populateTrainLayoutToLinalgPatterns(
    RewritePatternSet &patterns) {
  addLowerings<SumToOp, SumOp, MeanOp, BroadcastOp, ReshapeOp, TransposeOp,
               ConcatOp, SliceOp, SliceGradOp>(patterns, lowerNNOp);
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
  addLowerings<MseLossOp, MseLossGradOp, SgdUpdateOp>(patterns, lowerMLPOp);
  addLowerings<CrossEntropyOp, CrossEntropyGradOp, EmbeddingOp,
               EmbeddingGradOp, DropoutOp>(patterns, lowerNNOp);
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
