//===- GPUKernels.cpp - The kernel builder the GPU mapping shares ---------===//

#include "GPUKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

Value mlir::remat::detail::indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

SmallVector<Value> mlir::remat::detail::delinearize(OpBuilder &b, Location loc,
                                                    Value linear,
                                                    ArrayRef<Dim> dims) {
  SmallVector<Value> ivs;
  if (dims.size() == 1) {
    ivs.push_back(linear);
  } else if (!dims.empty()) {
    SmallVector<int64_t> basis;
    for (const Dim &d : dims)
      basis.push_back(d.extent);
    llvm::append_range(ivs, affine::AffineDelinearizeIndexOp::create(
                                b, loc, linear, basis, /*hasOuterBound=*/true)
                                .getResults());
  }
  for (auto [iv, d] : llvm::zip_equal(ivs, dims)) {
    if (d.step != 1)
      iv = arith::MulIOp::create(b, loc, iv, indexConst(b, loc, d.step));
    if (d.lower != 0)
      iv = arith::AddIOp::create(b, loc, iv, indexConst(b, loc, d.lower));
  }
  return ivs;
}

bool mlir::remat::detail::writesMemory(Operation *op) {
  if (isa<cf::AssertOp>(op)) // declares a write so as not to be reordered
    return false;
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    return effects.hasEffect<MemoryEffects::Write>();
  return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
}

void mlir::remat::detail::buildKernel(
    OpBuilder &b, Location loc, ArrayRef<Dim> dims, int64_t blockSize,
    function_ref<void(OpBuilder &, ValueRange)> body) {
  int64_t total = 1;
  for (const Dim &d : dims)
    total *= d.extent;
  int64_t block = std::max<int64_t>(1, std::min(blockSize, total));
  int64_t grid = (total + block - 1) / block;
  Value one = indexConst(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, indexConst(b, loc, grid), one,
                                      one, indexConst(b, loc, block), one, one);
  Block &entry = launch.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&entry);
  Value id = arith::AddIOp::create(
      kb, loc,
      arith::MulIOp::create(kb, loc, launch.getBlockIds().x,
                            launch.getBlockSize().x),
      launch.getThreadIds().x);
  gpu::TerminatorOp::create(kb, loc);
  kb.setInsertionPoint(entry.getTerminator());
  auto emitBody = [&](OpBuilder &ib) {
    body(ib, delinearize(ib, loc, id, dims));
  };
  if (grid * block == total) {
    emitBody(kb);
    return;
  }
  Value inRange = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, id,
                                        indexConst(kb, loc, total));
  auto guard = scf::IfOp::create(kb, loc, inRange, /*withElseRegion=*/false);
  OpBuilder tb = guard.getThenBodyBuilder();
  emitBody(tb);
}

std::optional<Dim> mlir::remat::detail::staticDim(Value lb, Value ub,
                                                  Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0 || *u <= *l)
    return std::nullopt;
  return Dim{*l, *s, (*u - *l + *s - 1) / *s};
}

std::optional<SmallVector<Dim>>
mlir::remat::detail::staticDims(ValueRange lbs, ValueRange ubs,
                                ValueRange steps) {
  SmallVector<Dim> dims;
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    std::optional<Dim> d = staticDim(lb, ub, step);
    if (!d)
      return std::nullopt;
    dims.push_back(*d);
  }
  return dims;
}

int64_t mlir::remat::detail::lanesFor(bool blockReductions, int64_t outputs,
                                      int64_t trip) {
  if (!blockReductions || outputs >= kBusyThreads)
    return 0;
  int64_t lanes = llvm::PowerOf2Ceil(llvm::divideCeil(kBusyThreads, outputs));
  int64_t perLane = static_cast<int64_t>(
      llvm::bit_floor(static_cast<uint64_t>(trip / kMinPerLane)));
  lanes = std::min(std::min(lanes, kMaxLanes), perLane);
  return lanes < kMinLanes ? 0 : lanes;
}

Operation *mlir::remat::detail::combiner(Value acc, Value next) {
  Operation *op = next.getDefiningOp();
  if (!op || !isa<FloatType>(acc.getType()) ||
      !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp>(op))
    return nullptr;
  if (!acc.hasOneUse() || op->getOperand(0) == op->getOperand(1) ||
      !llvm::is_contained(op->getOperands(), acc))
    return nullptr;
  return op;
}

Value mlir::remat::detail::identityOf(OpBuilder &b, Location loc,
                                      Operation *comb) {
  auto type = cast<FloatType>(comb->getResult(0).getType());
  const llvm::fltSemantics &sem = type.getFloatSemantics();
  APFloat v = isa<arith::AddFOp>(comb)       ? APFloat::getZero(sem, true)
              : isa<arith::MulFOp>(comb)     ? APFloat::getOne(sem)
              : isa<arith::MaximumFOp>(comb) ? APFloat::getInf(sem, true)
              : isa<arith::MinimumFOp>(comb) ? APFloat::getInf(sem, false)
                                             : APFloat::getNaN(sem);
  return arith::ConstantOp::create(b, loc, FloatAttr::get(type, v));
}

Value mlir::remat::detail::combine(OpBuilder &b, Location loc, Operation *comb,
                                   Value x, Value y) {
  return b
      .create(loc, comb->getName().getIdentifier(), ValueRange{x, y},
              comb->getResultTypes(), comb->getAttrs())
      ->getResult(0);
}

std::optional<InnerNest> mlir::remat::detail::innerNest(scf::ForOp outer) {
  InnerNest n;
  n.reduction = outer->hasAttr(kReductionLoopAttr);
  StringRef mark = n.reduction ? kReductionLoopAttr : kParallelLoopAttr;
  if (!outer->hasAttr(mark) || (!n.reduction && outer.getNumResults()))
    return std::nullopt;
  for (scf::ForOp loop = outer; loop;) {
    n.loops.push_back(loop);
    std::optional<Dim> d =
        staticDim(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (!d)
      return std::nullopt;
    n.dims.push_back(*d);
    n.trip *= d->extent;
    // The next level: the body's one op besides constants, a loop of the
    // same mark that threads the accumulators through.
    scf::ForOp next;
    for (Operation &op : loop.getBody()->without_terminator()) {
      auto f = dyn_cast<scf::ForOp>(op);
      if (f && !next && f->hasAttr(mark)) {
        next = f;
      } else if (!isa<arith::ConstantOp>(op)) {
        next = {};
        break;
      }
    }
    if (next && (!llvm::equal(next.getInitArgs(), loop.getRegionIterArgs()) ||
                 !llvm::equal(loop.getBody()->getTerminator()->getOperands(),
                              next.getResults())))
      return std::nullopt;
    loop = next;
  }
  scf::ForOp inner = n.loops.back();
  if (!n.reduction)
    return n;
  // A reduction's body only reads memory and computes.
  WalkResult writes = inner.getBody()->walk([](Operation *op) {
    return writesMemory(op) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (writes.wasInterrupted())
    return std::nullopt;
  Operation *yield = inner.getBody()->getTerminator();
  for (auto [acc, next] :
       llvm::zip(inner.getRegionIterArgs(), yield->getOperands())) {
    Operation *comb = combiner(acc, next);
    if (!comb)
      return std::nullopt;
    n.combs.push_back(comb);
  }
  return n;
}

SmallVector<Value> mlir::remat::detail::combineLanes(
    OpBuilder &kb, Location loc, Value tid, int64_t lanes, Value scratch,
    ArrayRef<Operation *> combs, ValueRange partials) {
  auto slot = [&](OpBuilder &b, size_t k, Value lane) -> Value {
    return arith::AddIOp::create(b, loc, lane, indexConst(b, loc, k * lanes));
  };
  for (auto [k, p] : llvm::enumerate(partials))
    memref::StoreOp::create(kb, loc, p, scratch, slot(kb, k, tid));
  gpu::BarrierOp::create(kb, loc);
  for (int64_t half = lanes / 2; half >= 1; half /= 2) {
    Value active = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult,
                                         tid, indexConst(kb, loc, half));
    auto ifOp = scf::IfOp::create(kb, loc, active, /*withElseRegion=*/false);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    Value other =
        arith::AddIOp::create(tb, loc, tid, indexConst(tb, loc, half));
    for (auto [k, comb] : llvm::enumerate(combs)) {
      Value x = memref::LoadOp::create(tb, loc, scratch, slot(tb, k, tid));
      Value y = memref::LoadOp::create(tb, loc, scratch, slot(tb, k, other));
      memref::StoreOp::create(tb, loc, combine(tb, loc, comb, x, y), scratch,
                              slot(tb, k, tid));
    }
    gpu::BarrierOp::create(kb, loc);
  }
  SmallVector<Value> totals;
  for (size_t k = 0; k < combs.size(); ++k)
    totals.push_back(memref::LoadOp::create(
        kb, loc, scratch, slot(kb, k, indexConst(kb, loc, 0))));
  gpu::BarrierOp::create(kb, loc);
  return totals;
}
