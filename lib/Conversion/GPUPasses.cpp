//===- GPUPasses.cpp - Bufferized step to GPU kernels ---------------------===//
//
// Upstream's parallel-loop mapping needs nested scf.parallel levels to give
// blocks and threads and maps at most three dimensions; the step's loops are
// flat nests of any rank, and the lowering also emits scf.for nests whose
// iterations are independent (row-wise ops). Every such nest becomes one
// kernel over its linearized iteration space, the innermost dimension
// fastest so neighbouring threads touch neighbouring elements. Which kernel
// each nest gets, by kind, is KernelMapper's (GPUMapping.h).
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATMAPTOGPU
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

namespace {
struct MapToGPUPass
    : public mlir::remat::impl::RematMapToGPUBase<MapToGPUPass> {
  using RematMapToGPUBase::RematMapToGPUBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("expects a step function of one block");
      return signalPassFailure();
    }
    RematMapToGPUOptions options;
    options.blockSize = blockSize;
    options.tileContractions = tileContractions;
    options.blockReductions = blockReductions;
    options.registerTile = registerTile;
    KernelMapper mapper(options);
    if (failed(mapper.mapLinalgOps(func)) ||
        failed(foldConstantGlobals(func)) || failed(mapper.mapBody(func)) ||
        failed(mapper.moveAllocationsToDevice(func)))
      return signalPassFailure();
  }
};
} // namespace
