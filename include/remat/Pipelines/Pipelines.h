//===- Pipelines.h - Named lowering pipelines -------------------*- C++ -*-===//
//
// The lowering from the train dialect to the LLVM dialect, as stage
// functions shared by remat-opt (as named pipelines) and remat-compile.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_PIPELINES_PIPELINES_H
#define REMAT_PIPELINES_PIPELINES_H

#include "remat/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::remat {

/// train -> linalg on tensors.
LogicalResult buildTrainToLinalgStage(OpPassManager &pm);
/// linalg on tensors -> memrefs with allocations and frees at last use.
/// With `convKernels`, convolutions become runtime calls (and their library
/// workspace a buffer) before; with `arena`, ends with remat-plan-arena.
LogicalResult buildBufferizationStage(OpPassManager &pm, bool arena = false,
                                      bool convKernels = false);
/// memrefs -> LLVM dialect for the CPU (matmul through the runtime's BLAS,
/// convolutions through its kernels unless `convKernels` is false).
LogicalResult buildCPUToLLVMStage(OpPassManager &pm, bool convKernels = true);

/// All three stages: `remat-cpu-pipeline`.
LogicalResult buildCPUPipeline(OpPassManager &pm);

/// The CUDA target's code generation choices.
struct CUDAOptions {
  std::string chip = "sm_90";
  /// gpu-module-to-binary's format: isa (PTX), bin (cubin) or fatbin.
  std::string format = "fatbin";
  /// The kernel shapes remat-map-to-gpu chooses.
  RematMapToGPUOptions mapping;
  /// Optimization level of the device code (NVPTX backend and ptxas).
  unsigned optLevel = 3;
  /// The CUDA toolkit for ptxas; empty: upstream's search.
  std::string toolkit;
};

/// The chips the CUDA target accepts, and the PTX feature each needs.
ArrayRef<std::pair<StringRef, StringRef>> cudaChips();

/// Bufferized memrefs -> one gpu.launch per loop nest, device allocations;
/// with `outline`, the kernels moved into one gpu.module and every launch
/// async on one stream.
LogicalResult buildGPUMappingStage(OpPassManager &pm,
                                   const CUDAOptions &options,
                                   bool outline = true);
/// gpu.launch -> gpu.module kernels and async launches on one stream, the
/// kernels in NVVM and the host in (mostly) the LLVM dialect.
LogicalResult buildCUDAToNVVMStage(OpPassManager &pm,
                                   const CUDAOptions &options);
/// Device code -> a gpu.binary (ptxas), host code -> LLVM dialect with
/// calls to the runtime's mgpu* functions.
LogicalResult buildCUDABinaryStage(OpPassManager &pm,
                                   const CUDAOptions &options);
/// linalg on tensors to the LLVM dialect with embedded device code:
/// `remat-cuda-pipeline`.
LogicalResult buildCUDAPipeline(OpPassManager &pm, const CUDAOptions &options);

/// Registers `remat-cpu-pipeline`, `remat-bufferize-pipeline`,
/// `remat-cpu-to-llvm-pipeline` and `remat-cuda-pipeline`.
void registerPipelines();

} // namespace mlir::remat

#endif // REMAT_PIPELINES_PIPELINES_H
