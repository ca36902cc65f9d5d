//===- NNLowering.h - The CNN and transformer ops' lowering -----*- C++ -*-===//
//
// One lowering object per op, its methods by family: elementwise,
// reductions and contractions (TrainNNToLinalg.cpp); row-wise
// normalizations, losses, embeddings and dropout (NNRowwise.cpp);
// convolution, pooling and layout (NNConvolution.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_CONVERSION_NNLOWERING_H
#define REMAT_LIB_CONVERSION_NNLOWERING_H

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

namespace mlir::remat::detail {
using namespace mlir::remat::train;
using namespace mlir::arith;
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
  Value lowerCompare(CompareOp cmp);
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
} // namespace mlir::remat::detail

#endif // REMAT_LIB_CONVERSION_NNLOWERING_H
