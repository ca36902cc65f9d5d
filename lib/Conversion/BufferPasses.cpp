//===- BufferPasses.cpp - Steps around upstream bufferization -------------===//
//
// Two small passes that upstream does not have in the form the step needs:
// dropping in-place updated parameters from a public function's results, and
// calling an optimized BLAS for matmul (upstream's convert-linalg-to-std
// cannot express transposed operands).
//
//===----------------------------------------------------------------------===//

#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATDROPDONATEDRESULTS
#define GEN_PASS_DEF_REMATMATMULTORUNTIME
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;
using train::TrainDialect;

namespace {
struct DropDonatedResultsPass
    : public mlir::remat::impl::RematDropDonatedResultsBase<
          DropDonatedResultsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func->hasAttr(TrainDialect::kStepAttr))
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      llvm::BitVector drop(func.getNumResults());
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        auto role =
            func.getResultAttrOfType<StringAttr>(i, TrainDialect::kRoleAttr);
        bool isArg = isa<BlockArgument>(ret.getOperand(i));
        if (role && role.getValue() == "updated_param" && !isArg) {
          func.emitError("result ")
              << i << " (an updated parameter) was not bufferized in place; "
              << "the parameter is read after its update";
          return signalPassFailure();
        }
        if (isArg)
          drop.set(i);
      }
      if (failed(func.eraseResults(drop)))
        return signalPassFailure();
      SmallVector<Value> kept;
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        if (!drop.test(i))
          kept.push_back(ret.getOperand(i));
      ret->setOperands(kept);
    }
  }
};

/// Returns whether `map` selects (d_a, d_b).
static bool selects(AffineMap map, unsigned a, unsigned b) {
  return map.getNumResults() == 2 &&
         map.getResult(0) == getAffineDimExpr(a, map.getContext()) &&
         map.getResult(1) == getAffineDimExpr(b, map.getContext());
}

struct MatmulToRuntimePass
    : public mlir::remat::impl::RematMatmulToRuntimeBase<MatmulToRuntimePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto module = func->getParentOfType<ModuleOp>();
    SmallVector<linalg::MatmulOp> matmuls;
    func.walk([&](linalg::MatmulOp mm) {
      if (mm.hasPureBufferSemantics())
        matmuls.push_back(mm);
    });
    for (linalg::MatmulOp mm : matmuls) {
      SmallVector<AffineMap> maps = mm.getIndexingMapsArray();
      // (d0, d1, d2) = (m, n, k).
      bool ta = selects(maps[0], 2, 0), tb = selects(maps[1], 1, 2);
      if (!(ta || selects(maps[0], 0, 2)) || !(tb || selects(maps[1], 2, 1)) ||
          !selects(maps[2], 0, 1))
        continue;
      auto cType = cast<MemRefType>(mm.getOutputs()[0].getType());
      Type element = cType.getElementType();
      if (!element.isF32() && !element.isF64())
        continue;
      if (llvm::any_of(mm->getOperandTypes(), [](Type t) {
            return !cast<MemRefType>(t).getLayout().isIdentity();
          }))
        continue;
      OpBuilder b(mm);
      Location loc = mm.getLoc();
      auto dynamic = MemRefType::get(
          {ShapedType::kDynamic, ShapedType::kDynamic}, element);
      std::string name =
          element.isF32() ? "remat_rt_matmul_f32" : "remat_rt_matmul_f64";
      auto i32 = b.getI32Type();
      auto fnType =
          b.getFunctionType({i32, i32, dynamic, dynamic, dynamic}, {});
      if (!module.lookupSymbol<func::FuncOp>(name)) {
        OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
        auto decl = func::FuncOp::create(mb, loc, name, fnType);
        decl.setPrivate();
        decl->setAttr("llvm.emit_c_interface", mb.getUnitAttr());
      }
      SmallVector<Value> args = {arith::ConstantIntOp::create(b, loc, i32, ta),
                                 arith::ConstantIntOp::create(b, loc, i32, tb)};
      for (Value v : mm->getOperands())
        args.push_back(memref::CastOp::create(b, loc, dynamic, v));
      func::CallOp::create(b, loc, name, TypeRange{}, args);
      mm.erase();
    }
  }
};
} // namespace
