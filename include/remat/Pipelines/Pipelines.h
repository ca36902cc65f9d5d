//===- Pipelines.h - Named lowering pipelines -------------------*- C++ -*-===//
//
// The lowering from the train dialect to the LLVM dialect, as stage
// functions shared by remat-opt (as named pipelines) and remat-compile.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_PIPELINES_PIPELINES_H
#define REMAT_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::remat {

/// train -> linalg on tensors.
LogicalResult buildTrainToLinalgStage(OpPassManager &pm);
/// linalg on tensors -> memrefs with allocations and frees at last use.
LogicalResult buildBufferizationStage(OpPassManager &pm);
/// memrefs -> LLVM dialect for the CPU (matmul through the runtime's BLAS).
LogicalResult buildCPUToLLVMStage(OpPassManager &pm);

/// All three stages: `remat-cpu-pipeline`.
LogicalResult buildCPUPipeline(OpPassManager &pm);

/// Registers `remat-cpu-pipeline`, `remat-bufferize-pipeline` and
/// `remat-cpu-to-llvm-pipeline`.
void registerPipelines();

} // namespace mlir::remat

#endif // REMAT_PIPELINES_PIPELINES_H
