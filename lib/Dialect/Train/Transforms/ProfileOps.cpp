//===- ProfileOps.cpp - Timers around each priced op ----------------------===//
//
// The profiling build behind the profile cost model: remat-run reads the
// timers these calls feed and writes each op's measured time under the key
// the cost model looks it up by (CostModel.h's OpKey).
//
//===----------------------------------------------------------------------===//

#include "remat/Analysis/CostModel.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <tuple>

namespace mlir::remat::train {
#define GEN_PASS_DEF_TRAINPROFILEOPS
#include "remat/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::remat::train

using namespace mlir;
using namespace mlir::remat;

static constexpr StringLiteral kBegin = "remat_rt_profile_begin",
                               kEnd = "remat_rt_profile_end",
                               kTable = "remat.profile_ops";

namespace {
struct TrainProfileOpsPass
    : public train::impl::TrainProfileOpsBase<TrainProfileOpsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr(kTable)) {
      module.emitError("the module is instrumented already (it has '")
          << kTable << "')";
      return signalPassFailure();
    }
    OpBuilder b(module.getBodyRegion());
    MLIRContext *ctx = &getContext();
    auto timerType = b.getFunctionType({b.getI32Type()}, {});
    for (StringRef name : {kBegin, kEnd}) {
      if (SymbolTable::lookupSymbolIn(module, name)) {
        module.emitError("symbol '") << name << "' is the runtime's";
        return signalPassFailure();
      }
    }

    std::map<std::tuple<std::string, std::string, std::string>, int32_t> ids;
    SmallVector<Attribute> table;
    SmallVector<Operation *> priced;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func->hasAttr(train::TrainDialect::kStepAttr))
        func.walk([&](train::CostOpInterface op) { priced.push_back(op); });
    for (Operation *op : priced) {
      OpKey key = getOpKey(op);
      auto [it, added] =
          ids.try_emplace({key.op, key.loc, key.types}, table.size());
      if (added)
        table.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("op", b.getStringAttr(key.op)),
             b.getNamedAttr("loc", b.getStringAttr(key.loc)),
             b.getNamedAttr("types", b.getStringAttr(key.types))}));
      b.setInsertionPoint(op);
      Value id = arith::ConstantIntOp::create(b, op->getLoc(), it->second, 32);
      func::CallOp::create(b, op->getLoc(), kBegin, TypeRange(), id);
      b.setInsertionPointAfter(op);
      func::CallOp::create(b, op->getLoc(), kEnd, TypeRange(), id);
    }
    b.setInsertionPointToStart(module.getBody());
    for (StringRef name : {kBegin, kEnd})
      func::FuncOp::create(b, module.getLoc(), name, timerType).setPrivate();
    module->setAttr(kTable, ArrayAttr::get(ctx, table));
  }
};
} // namespace
