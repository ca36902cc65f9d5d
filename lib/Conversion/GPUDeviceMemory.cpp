//===- GPUDeviceMemory.cpp - Device allocation ----------------------------===//
//
// Allocation and deallocation stay on the host, in the order the schedule
// put them, as gpu.alloc / gpu.dealloc; constants kernels read must be
// splats, folded into the kernels.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

LogicalResult KernelMapper::moveAllocationsToDevice(func::FuncOp func) {
  SmallVector<Operation *> allocs;
  WalkResult result = func.walk([&](Operation *op) {
    if (!isa<memref::AllocOp, memref::DeallocOp>(op))
      return WalkResult::advance();
    if (op->getParentOp() != func) {
      op->emitError("the CUDA target allocates device memory only at the "
                    "top level of the step");
      return WalkResult::interrupt();
    }
    allocs.push_back(op);
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  for (Operation *op : allocs) {
    OpBuilder b(op);
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto dev = gpu::AllocOp::create(
          b, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
          ValueRange{}, alloc.getDynamicSizes(), alloc.getSymbolOperands(),
          /*hostShared=*/false);
      alloc.replaceAllUsesWith(dev.getMemref());
    } else {
      gpu::DeallocOp::create(b, op->getLoc(), /*asyncToken=*/Type(),
                             ValueRange{},
                             cast<memref::DeallocOp>(op).getMemref());
    }
    op->erase();
  }
  return success();
}

LogicalResult mlir::remat::detail::foldConstantGlobals(func::FuncOp func) {
  SmallVector<memref::LoadOp> loads;
  func.walk([&](memref::LoadOp load) {
    if (load.getMemRef().getDefiningOp<memref::GetGlobalOp>())
      loads.push_back(load);
  });
  for (memref::LoadOp load : loads) {
    auto get = load.getMemRef().getDefiningOp<memref::GetGlobalOp>();
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    auto init =
        global && global.getConstant()
            ? dyn_cast_or_null<DenseElementsAttr>(global.getConstantInitValue())
            : DenseElementsAttr();
    if (!init || !init.isSplat())
      continue;
    OpBuilder b(load);
    Value c = arith::ConstantOp::create(
        b, load.getLoc(), cast<TypedAttr>(init.getSplatValue<Attribute>()));
    load.replaceAllUsesWith(c);
    load.erase();
  }
  WalkResult result = func.walk([&](memref::GetGlobalOp get) {
    if (get->use_empty()) {
      get.erase();
      return WalkResult::advance();
    }
    get.emitError("the CUDA target supports only splat constants; '")
        << get.getName() << "' would be read from host memory by a kernel";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
