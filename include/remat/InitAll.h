//===- InitAll.h - Registration shared by every tool ------------*- C++ -*-===//
//
// One place that registers Remat's dialect, passes and pipelines together
// with the upstream ones the pipelines use.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_INITALL_H
#define REMAT_INITALL_H

#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Dialect/Train/Transforms/Passes.h"
#include "remat/Pipelines/Pipelines.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir::remat {

inline void registerAllDialects(DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // Translation to LLVM IR: remat-compile for the host module,
  // gpu-module-to-binary for device modules.
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<train::TrainDialect>();
}

inline void registerAllPasses() {
  mlir::registerAllPasses();
  train::registerTrainPasses();
  registerRematConversionPasses();
  registerPipelines();
}

} // namespace mlir::remat

#endif // REMAT_INITALL_H
