//===- GPUModules.cpp - One device module per step ------------------------===//

#include "remat/Conversion/Passes.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATMERGEGPUMODULES
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;

namespace {
/// Moves every outlined kernel into one gpu.module, so that the step has
/// one device binary: one PTX file, one cubin, one module load.
struct MergeGPUModulesPass
    : public mlir::remat::impl::RematMergeGPUModulesBase<MergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.size() < 2)
      return;
    gpu::GPUModuleOp merged = modules.front();
    SymbolTable table(merged);
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp from : ArrayRef(modules).drop_front()) {
      for (Operation &op :
           llvm::make_early_inc_range(from.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol) {
          op.emitError("cannot merge a non-symbol op into one gpu.module");
          return signalPassFailure();
        }
        StringAttr old = symbol.getNameAttr();
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        // Outlined kernels share their function's name; the insert renames
        // them uniquely.
        renamed[{from.getNameAttr(), old}] = table.insert(&op);
      }
      from.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it =
          renamed.find({kernel.getRootReference(), kernel.getLeafReference()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
  }
};
} // namespace
