//===- GPUSerial.cpp - Serial kernels and the host body -------------------===//
//
// What no other kernel kind takes (scalar reductions, scatters) runs in
// one-thread kernels, since the host cannot read device memory; views,
// allocation and pure host values stay on the host.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

LogicalResult KernelMapper::wrapSerial(ArrayRef<Operation *> run) {
  if (run.empty())
    return success();
  Operation *last = run.back();
  Location loc = run.front()->getLoc();
  OpBuilder b(last);
  Value one = indexConst(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  Block &entry = launch.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&entry);
  auto term = gpu::TerminatorOp::create(kb, loc);
  for (Operation *op : run)
    op->moveBefore(term);
  for (Operation *op : run)
    for (Value v : op->getResults())
      for (Operation *user : v.getUsers())
        if (!launch->isProperAncestor(user))
          return op->emitError("the CUDA target cannot use a value computed "
                               "on the device in host code");
  return success();
}

bool KernelMapper::isHostOp(Operation &op,
                            const llvm::SmallPtrSetImpl<Operation *> &device) {
  if (isa<memref::AllocOp, memref::DeallocOp, func::ReturnOp, gpu::LaunchOp>(
          op) ||
      isa<ViewLikeOpInterface>(op))
    return true;
  if (!isPure(&op) || op.getNumRegions() != 0)
    return false;
  return llvm::none_of(op.getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && device.contains(def);
  });
}

LogicalResult KernelMapper::mapBody(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::SmallPtrSet<Operation *, 16> device;
  SmallVector<Operation *> run;
  auto flush = [&]() {
    LogicalResult r = wrapSerial(run);
    run.clear();
    device.clear();
    return r;
  };
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (failed(flush()))
        return failure();
      if (mapParallel(loop))
        continue;
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (failed(flush()))
        return failure();
      if (loop->hasAttr(kParallelLoopAttr) ? mapParallelFor(loop)
                                           : mapReductionNest(loop))
        continue;
    }
    // A free ends a run: moving compute across it would change the peak.
    if (isa<memref::DeallocOp, func::ReturnOp, gpu::LaunchOp>(op)) {
      if (failed(flush()))
        return failure();
      continue;
    }
    if (isHostOp(op, device))
      continue;
    run.push_back(&op);
    device.insert(&op);
  }
  return flush();
}
