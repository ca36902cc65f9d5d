//===- NNConvolution.cpp - Convolution, pooling, layout -------------------===//
//
// Windows read through clamped tensor.extract and select (padding reads
// nothing); convolutions as loop nests remat-conv-to-runtime can hand to the
// runtime's kernels; pooling, upsampling, concatenation and slicing.
//
//===----------------------------------------------------------------------===//

#include "NNLowering.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

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
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("kind", b.getI32IntegerAttr(kind)),
      b.getNamedAttr("window", b.getDenseI64ArrayAttr(window))};
  auto bytes = op->getAttrOfType<IntegerAttr>(train::kWorkspaceBytesAttr);
  auto layout = op->getAttrOfType<StringAttr>(train::kConvLayoutAttr);
  if (bytes && layout) {
    entries.push_back(b.getNamedAttr("workspace", bytes));
    entries.push_back(b.getNamedAttr(
        "layout", b.getI32IntegerAttr(layout.getValue() == "blocked")));
  }
  auto tag = b.getDictionaryAttr(entries);
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
