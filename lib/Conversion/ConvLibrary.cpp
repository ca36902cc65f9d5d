//===- ConvLibrary.cpp - Choose oneDNN for f32 convolutions ---------------===//
//
// remat-conv-library: records on each f32 convolution the workspace the
// runtime's oneDNN primitive for it needs, asking the same code the runtime
// runs (runtime/lib/ConvLibrary.cpp), so that the memory model, the solver
// and the arena plan count it.
//
//===----------------------------------------------------------------------===//

#include "remat/ConvLibrary.h"
#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATCONVLIBRARY
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::train;

namespace {
/// The runtime's description of a convolution op: kind, window and the
/// shapes of a, b and out in the order the runtime reads them.
template <typename OpTy>
::remat::ConvDesc describe(OpTy op, int32_t kind, Value a, Value b) {
  ::remat::ConvDesc d{kind, {}, {}, {}, {}};
  int64_t *w = d.window;
  for (ArrayRef<int64_t> pair :
       {op.getStrides(), op.getPadding(), op.getDilation()})
    for (int64_t v : pair)
      *w++ = v;
  *w = static_cast<int64_t>(op.getGroups());
  auto copy = [](Value v, int64_t *to) {
    llvm::copy(cast<RankedTensorType>(v.getType()).getShape(), to);
  };
  copy(a, d.a);
  copy(b, d.b);
  copy(op.getResult(), d.out);
  return d;
}

struct ConvLibraryPass
    : public mlir::remat::impl::RematConvLibraryBase<ConvLibraryPass> {
  using Base::Base;
  void runOnOperation() override {
    if (layout != "auto" && layout != "blocked" && layout != "plain") {
      getOperation().emitError("remat-conv-library: unknown layout '")
          << layout << "' (expected auto, blocked or plain)";
      return signalPassFailure();
    }
    int n = threads > 0 ? int(threads) : ::remat::defaultConvThreads();
    Builder b(&getContext());
    // An op's footprint: its operands, result and workspace, all live while
    // it computes. No schedule peaks below the largest (with the fixed
    // part); under `auto` oneDNN may not raise that floor.
    auto footprint = [](Operation *op) {
      int64_t bytes = 0;
      for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
        bytes += getTensorBytes(v.getType());
      if (auto cost = dyn_cast<CostOpInterface>(op))
        bytes += cost.getWorkspaceBytes();
      return bytes;
    };
    int64_t floor = 0;
    getOperation().walk(
        [&](CostOpInterface op) { floor = std::max(floor, footprint(op)); });
    auto stamp = [&](Operation *op, ::remat::ConvDesc d) {
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      if (!type.getElementType().isF32() || !type.hasStaticShape())
        return;
      // oneDNN's plain primitives are several times slower than the
      // runtime's kernels on depthwise convolutions.
      const int64_t *weight = d.kind == 2 ? d.out : d.b;
      bool depthwise = weight[1] == 1;
      int64_t best = -1;
      StringRef chosen;
      for (StringRef candidate : {"plain", "blocked"}) {
        if ((layout != "auto" && layout != candidate) ||
            (candidate == "plain" && depthwise))
          continue;
        d.layout = candidate == "plain" ? ::remat::ConvLayout::Plain
                                        : ::remat::ConvLayout::Blocked;
        int64_t bytes = ::remat::convLibraryWorkspace(d, n);
        if (bytes < 0 || (layout == "auto" && footprint(op) + bytes > floor))
          continue;
        // The first that fits: plain, whose scratch is usually the smaller
        // (it copies no operands), then blocked.
        best = bytes;
        chosen = candidate;
        break;
      }
      if (best < 0)
        return;
      op->setAttr(kWorkspaceBytesAttr, b.getI64IntegerAttr(best));
      op->setAttr(kConvLayoutAttr, b.getStringAttr(chosen));
    };
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<Conv2DOp>(op))
        stamp(op, describe(conv, 0, conv.getInput(), conv.getWeight()));
      else if (auto grad = dyn_cast<Conv2DGradInputOp>(op))
        stamp(op, describe(grad, 1, grad.getGrad(), grad.getWeight()));
      else if (auto grad = dyn_cast<Conv2DGradWeightOp>(op))
        stamp(op, describe(grad, 2, grad.getInput(), grad.getGrad()));
    });
  }
};
} // namespace
