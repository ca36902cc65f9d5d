//===- OutlineLoopNests.cpp - One function per distinct loop nest ---------===//
//
// Keeps LLVM's optimization linear in the model: each top-level loop nest of
// a function becomes a call, and nests that print the same (same ops, same
// types, same constants) share one callee. Scalar constants are cloned into
// the callee; every other value from outside is an argument.
//
//===----------------------------------------------------------------------===//

#include "remat/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATOUTLINELOOPNESTS
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;

namespace {
/// The function's body as text without its name: equal texts are equal
/// functions.
std::string bodyKey(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << fn.getFunctionType();
  fn.getBody().front().walk<WalkOrder::PreOrder>([&](Operation *op) {
    op->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    return WalkResult::skip();
  });
  return text;
}

struct OutlineLoopNestsPass
    : public mlir::remat::impl::RematOutlineLoopNestsBase<
          OutlineLoopNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    IRRewriter rewriter(&getContext());
    for (func::FuncOp fn : functions) {
      if (fn.isExternal() || fn->hasAttr("remat.outlined"))
        continue;
      SmallVector<scf::ForOp> nests;
      for (Operation &op : fn.getBody().front())
        if (auto loop = dyn_cast<scf::ForOp>(op);
            loop && loop.getNumResults() == 0)
          nests.push_back(loop);
      llvm::StringMap<func::FuncOp> byBody;
      unsigned count = 0;
      for (scf::ForOp loop : nests) {
        // scf.execute_region gives the nest the single-block region that
        // outlineSingleBlockRegion takes.
        rewriter.setInsertionPoint(loop);
        auto wrapper =
            scf::ExecuteRegionOp::create(rewriter, loop.getLoc(), TypeRange{});
        Block *body = rewriter.createBlock(&wrapper.getRegion());
        rewriter.setInsertionPointToEnd(body);
        scf::YieldOp::create(rewriter, loop.getLoc());
        loop->moveBefore(body->getTerminator());
        // Scalar constants from outside are cloned in, so that LLVM folds
        // them (outlineSingleBlockRegion would pass them as arguments).
        rewriter.setInsertionPointToStart(body);
        loop.walk([&](Operation *inner) {
          for (OpOperand &use : inner->getOpOperands()) {
            Operation *def = use.get().getDefiningOp();
            if (def && def->hasTrait<OpTrait::ConstantLike>() &&
                !isa<ShapedType>(use.get().getType()) &&
                !wrapper->isAncestor(def))
              use.set(rewriter.clone(*def)->getResult(0));
          }
        });
        std::string name = (fn.getName() + "_nest" + Twine(count++)).str();
        func::CallOp call;
        FailureOr<func::FuncOp> outlined = outlineSingleBlockRegion(
            rewriter, loop.getLoc(), wrapper.getRegion(), name, &call);
        if (failed(outlined)) {
          wrapper.emitError("could not outline this loop nest");
          return signalPassFailure();
        }
        // The call is left inside the wrapper's region; its operands are
        // defined above it.
        call->moveBefore(wrapper);
        rewriter.eraseOp(wrapper);
        func::FuncOp callee = *outlined;
        callee.setPrivate();
        callee->setAttr("remat.outlined", rewriter.getUnitAttr());
        auto [it, inserted] = byBody.try_emplace(bodyKey(callee), callee);
        if (!inserted) {
          call.setCallee(it->second.getName());
          rewriter.eraseOp(callee);
        }
      }
    }
  }
};
} // namespace
