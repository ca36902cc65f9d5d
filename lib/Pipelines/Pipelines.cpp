//===- Pipelines.cpp - Named lowering pipelines ---------------------------===//
//
// Upstream passes, in an order that keeps the remat decisions: no CSE or
// canonicalization before bufferization (they could merge a recomputation
// with its original), one allocation per train op, frees moved to the last
// use, and allocations routed to the runtime's counting allocator.
//
//===----------------------------------------------------------------------===//

#include "remat/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

LogicalResult mlir::remat::buildTrainToLinalgStage(OpPassManager &pm) {
  return parsePassPipeline("convert-train-to-linalg", pm);
}

LogicalResult mlir::remat::buildBufferizationStage(OpPassManager &pm) {
  const char *stage =
      // Identity layouts keep the step's ABI simple for the driver. No
      // alignment request: the runtime aligns every buffer itself, so the
      // bytes requested are exactly the tensor sizes the simulator counts.
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map "
      "buffer-alignment=0},"
      // Updated parameters live in the argument buffers; the step does not
      // return them.
      "remat-drop-donated-results,"
      // Ownership-based deallocation frees at the end of the block; moving
      // each free to right after the last use restores remat's liveness.
      "buffer-deallocation-pipeline,"
      "func.func(optimize-allocation-liveness),"
      "convert-bufferization-to-memref";
  return parsePassPipeline(stage, pm);
}

LogicalResult mlir::remat::buildCPUToLLVMStage(OpPassManager &pm) {
  const char *stage =
      "func.func(remat-matmul-to-runtime,convert-linalg-to-loops),"
      "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
      // Generic allocation functions are the runtime's counting allocator.
      "finalize-memref-to-llvm{use-generic-functions=true},"
      // libm has no f16/bf16 functions: those compute in f32.
      "func.func(math-extend-to-supported-types),"
      "convert-math-to-libm,convert-to-llvm,reconcile-unrealized-casts";
  return parsePassPipeline(stage, pm);
}

LogicalResult mlir::remat::buildCPUPipeline(OpPassManager &pm) {
  return success(succeeded(buildTrainToLinalgStage(pm)) &&
                 succeeded(buildBufferizationStage(pm)) &&
                 succeeded(buildCPUToLLVMStage(pm)));
}

void mlir::remat::registerPipelines() {
  auto reg = [](const char *name, const char *description,
                LogicalResult (*build)(OpPassManager &)) {
    PassPipelineRegistration<>(name, description,
                               [build](OpPassManager &pm) { (void)build(pm); });
  };
  reg("remat-cpu-pipeline",
      "Lowers a train step to the LLVM dialect for the CPU", buildCPUPipeline);
  reg("remat-bufferize-pipeline",
      "Bufferizes lowered linalg with frees at last use",
      buildBufferizationStage);
  reg("remat-cpu-to-llvm-pipeline",
      "Lowers bufferized linalg to the LLVM dialect for the CPU",
      buildCPUToLLVMStage);
}
