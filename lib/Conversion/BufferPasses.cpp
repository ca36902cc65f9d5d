//===- BufferPasses.cpp - Steps around upstream bufferization -------------===//
//
// Small passes that upstream does not have in the form the step needs:
// dropping in-place updated parameters from a public function's results,
// calling an optimized BLAS for matmul (upstream's convert-linalg-to-std
// cannot express transposed operands), and calling the runtime's kernels
// for convolutions.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATDROPDONATEDRESULTS
#define GEN_PASS_DEF_REMATMATMULTORUNTIME
#define GEN_PASS_DEF_REMATCONVTORUNTIME
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
        bool isArg = isa<BlockArgument>(ret.getOperand(i));
        std::optional<train::Role> role = train::getResultRole(func, i);
        if ((role == train::Role::updated_param ||
             role == train::Role::updated_state) &&
            !isArg) {
          bool param = role == train::Role::updated_param;
          func.emitError("result ")
              << i << " (an updated "
              << (param ? "parameter" : "optimizer state")
              << ") was not bufferized in place; the "
              << (param ? "parameter" : "state") << " is read after its update";
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

/// Whether `map` is (d0, da, db): a batched operand.
static bool selectsBatched(AffineMap map, unsigned a, unsigned b) {
  MLIRContext *ctx = map.getContext();
  return map.getNumResults() == 3 &&
         map.getResult(0) == getAffineDimExpr(0, ctx) &&
         map.getResult(1) == getAffineDimExpr(a, ctx) &&
         map.getResult(2) == getAffineDimExpr(b, ctx);
}

/// Whether `op`'s body is `out + lhs * rhs`.
static bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(body.front());
  auto add = dyn_cast<arith::AddFOp>(*std::next(body.begin()));
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!mul || !add || yield.getOperand(0) != add.getResult())
    return false;
  bool mulArgs = (mul.getLhs() == body.getArgument(0) &&
                  mul.getRhs() == body.getArgument(1)) ||
                 (mul.getLhs() == body.getArgument(1) &&
                  mul.getRhs() == body.getArgument(0));
  bool addArgs =
      (add.getLhs() == body.getArgument(2) &&
       add.getRhs() == mul.getResult()) ||
      (add.getRhs() == body.getArgument(2) && add.getLhs() == mul.getResult());
  return mulArgs && addArgs;
}

/// The transpose flags of a batched product C[b] += op(A[b]) op(B[b]) on
/// identity-layout f32 or f64 memrefs, the form train.batch_matmul lowers
/// to; none for any other op.
static std::optional<std::pair<bool, bool>>
matchBatchMatmul(linalg::GenericOp op) {
  using utils::IteratorType;
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 ||
      op.getIteratorTypesArray() !=
          SmallVector<IteratorType>{
              IteratorType::parallel, IteratorType::parallel,
              IteratorType::parallel, IteratorType::reduction} ||
      !isMultiplyAccumulate(op))
    return std::nullopt;
  // (d0, d1, d2, d3) = (batch, m, n, k).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool ta = selectsBatched(maps[0], 3, 1), tb = selectsBatched(maps[1], 2, 3);
  if (!(ta || selectsBatched(maps[0], 1, 3)) ||
      !(tb || selectsBatched(maps[1], 3, 2)) || !selectsBatched(maps[2], 1, 2))
    return std::nullopt;
  Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  if (llvm::any_of(op->getOperandTypes(),
                   [&](Type t) {
                     auto m = cast<MemRefType>(t);
                     return !m.getLayout().isIdentity() ||
                            m.getElementType() != element;
                   }) ||
      (!element.isF32() && !element.isF64()))
    return std::nullopt;
  return std::make_pair(ta, tb);
}

/// Declares the runtime's `name` (C interface) in `module` once.
static void declareRuntimeFunction(ModuleOp module, Location loc,
                                   StringRef name, FunctionType type) {
  if (module.lookupSymbol<func::FuncOp>(name))
    return;
  OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(mb, loc, name, type);
  decl.setPrivate();
  decl->setAttr("llvm.emit_c_interface", mb.getUnitAttr());
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
      declareRuntimeFunction(
          module, loc, name,
          b.getFunctionType({i32, i32, dynamic, dynamic, dynamic}, {}));
      SmallVector<Value> args = {arith::ConstantIntOp::create(b, loc, i32, ta),
                                 arith::ConstantIntOp::create(b, loc, i32, tb)};
      for (Value v : mm->getOperands())
        args.push_back(memref::CastOp::create(b, loc, dynamic, v));
      func::CallOp::create(b, loc, name, TypeRange{}, args);
      mm.erase();
    }

    SmallVector<std::pair<linalg::GenericOp, std::pair<bool, bool>>> batched;
    func.walk([&](linalg::GenericOp op) {
      if (auto flags = matchBatchMatmul(op))
        batched.push_back({op, *flags});
    });
    for (auto [op, flags] : batched) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
      auto dynamic = MemRefType::get(
          {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
          element);
      std::string name = element.isF32() ? "remat_rt_batch_matmul_f32"
                                         : "remat_rt_batch_matmul_f64";
      auto i32 = b.getI32Type();
      declareRuntimeFunction(
          module, loc, name,
          b.getFunctionType({i32, i32, dynamic, dynamic, dynamic}, {}));
      SmallVector<Value> args = {
          arith::ConstantIntOp::create(b, loc, i32, flags.first),
          arith::ConstantIntOp::create(b, loc, i32, flags.second)};
      for (Value v : op->getOperands())
        args.push_back(memref::CastOp::create(b, loc, dynamic, v));
      func::CallOp::create(b, loc, name, TypeRange{}, args);
      op.erase();
    }
  }
};
/// Whether rank-4 shapes `a`, `b`, `out` are a convolution of `kind` with
/// `window` (see kConvAttr), as the runtime reads them.
static bool convShapesAgree(int32_t kind, ArrayRef<int64_t> window,
                            ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                            ArrayRef<int64_t> out) {
  ArrayRef<int64_t> in = kind == 1 ? out : a, weight = kind == 2 ? out : b,
                    res = kind == 0   ? out
                          : kind == 1 ? a
                                      : b;
  int64_t groups = window[6];
  if (llvm::any_of(window.take_front(2), [](int64_t s) { return s < 1; }) ||
      window[2] < 0 || window[3] < 0 || window[4] < 1 || window[5] < 1 ||
      groups < 1 || in[1] != weight[1] * groups || weight[0] % groups ||
      res[0] != in[0] || res[1] != weight[0])
    return false;
  for (int d = 0; d < 2; ++d) {
    int64_t span = window[4 + d] * (weight[2 + d] - 1) + 1;
    int64_t padded = in[2 + d] + 2 * window[2 + d];
    if (padded < span || res[2 + d] != (padded - span) / window[d] + 1)
      return false;
  }
  return true;
}

struct ConvToRuntimePass
    : public mlir::remat::impl::RematConvToRuntimeBase<ConvToRuntimePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto module = func->getParentOfType<ModuleOp>();
    // The outermost tagged loops (the nest's inner loops carry the tag too).
    SmallVector<scf::ForOp> nests;
    for (auto loop : func.getBody().getOps<scf::ForOp>())
      if (loop->hasAttr(kConvAttr) && loop.getNumResults() == 0)
        nests.push_back(loop);
    for (scf::ForOp nest : nests) {
      auto info = nest->getAttrOfType<DictionaryAttr>(kConvAttr);
      auto kindAttr = info ? info.getAs<IntegerAttr>("kind") : nullptr;
      auto windowAttr =
          info ? info.getAs<DenseI64ArrayAttr>("window") : nullptr;
      if (!kindAttr || !windowAttr || windowAttr.size() != 7)
        continue;
      int32_t kind = kindAttr.getInt();
      auto workspace = info.getAs<IntegerAttr>("workspace");
      auto layout = info.getAs<IntegerAttr>("layout");
      // A nest handed to oneDNN must become its call: the memory plan
      // counted the call's workspace.
      auto refuse = [&] {
        if (!workspace)
          return;
        nest.emitError("internal error: a convolution with a library "
                       "workspace does not match its tag");
        signalPassFailure();
      };
      SmallVector<Value> reads, writes;
      bool other = false;
      nest.walk([&](Operation *op) {
        if (auto load = dyn_cast<memref::LoadOp>(op))
          reads.push_back(load.getMemRef());
        else if (auto store = dyn_cast<memref::StoreOp>(op))
          writes.push_back(store.getMemRef());
        else if (!isMemoryEffectFree(op) && !isa<scf::ForOp, scf::YieldOp>(op))
          other = true;
      });
      if (other || reads.size() != 2 || writes.size() != 1 || kind < 0 ||
          kind > 2) {
        refuse();
        continue;
      }
      Value operands[3] = {reads[0], reads[1], writes[0]};
      auto outType = cast<MemRefType>(writes[0].getType());
      Type element = outType.getElementType();
      auto shape = [](Value v) {
        return cast<MemRefType>(v.getType()).getShape();
      };
      if ((!element.isF32() && !element.isF64()) ||
          (workspace && (!element.isF32() || !layout)) ||
          llvm::any_of(operands,
                       [&](Value v) {
                         auto t = cast<MemRefType>(v.getType());
                         return t.getRank() != 4 ||
                                !t.getLayout().isIdentity() ||
                                t.getElementType() != element ||
                                !t.hasStaticShape();
                       }) ||
          !convShapesAgree(kind, windowAttr.asArrayRef(), shape(reads[0]),
                           shape(reads[1]), shape(writes[0]))) {
        refuse();
        continue;
      }
      OpBuilder b(nest);
      Location loc = nest.getLoc();
      int64_t dyn = ShapedType::kDynamic;
      auto dynamic = MemRefType::get({dyn, dyn, dyn, dyn}, element);
      std::string name = workspace         ? "remat_rt_conv2d_dnnl_f32"
                         : element.isF32() ? "remat_rt_conv2d_f32"
                                           : "remat_rt_conv2d_f64";
      SmallVector<Type> argTypes = {b.getI32Type()};
      if (workspace)
        argTypes.push_back(b.getI32Type());
      argTypes.append(7, b.getI64Type());
      argTypes.append(3, dynamic);
      auto bytesType = MemRefType::get({dyn}, b.getI8Type());
      if (workspace)
        argTypes.push_back(bytesType);
      declareRuntimeFunction(module, loc, name,
                             b.getFunctionType(argTypes, {}));
      SmallVector<Value> args = {
          arith::ConstantIntOp::create(b, loc, b.getI32Type(), kind)};
      if (workspace)
        args.push_back(arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                    layout.getInt()));
      for (int64_t w : windowAttr.asArrayRef())
        args.push_back(arith::ConstantIntOp::create(b, loc, b.getI64Type(), w));
      for (Value v : operands)
        args.push_back(memref::CastOp::create(b, loc, dynamic, v));
      // The workspace: a buffer of the step, live just around the call
      // (nothing when the primitive needs none).
      Value scratch;
      if (workspace) {
        int64_t bytes = workspace.getInt();
        auto type = MemRefType::get({bytes}, b.getI8Type());
        scratch = bytes > 0
                      ? memref::AllocOp::create(b, loc, type).getResult()
                      : memref::AllocaOp::create(b, loc, type).getResult();
        args.push_back(memref::CastOp::create(b, loc, bytesType, scratch));
      }
      func::CallOp::create(b, loc, name, TypeRange{}, args);
      if (scratch && scratch.getDefiningOp<memref::AllocOp>())
        memref::DeallocOp::create(b, loc, scratch);
      nest.erase();
    }
  }
};
} // namespace
