//===- NNRowwise.cpp - Normalizations, losses, dropout --------------------===//
//
// Row-wise ops as scf loops on tensors with scalar accumulators, which
// bufferize in place into the result: softmax, layer and batch norm,
// cross-entropy, embedding scatters, and dropout's counter-based mask.
//
//===----------------------------------------------------------------------===//

#include "NNLowering.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

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
