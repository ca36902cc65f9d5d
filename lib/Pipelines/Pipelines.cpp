//===- Pipelines.cpp - Named lowering pipelines ---------------------------===//
//
// Upstream passes, in an order that keeps the remat decisions: no CSE or
// canonicalization before bufferization (they could merge a recomputation
// with its original), one allocation per train op, frees moved to the last
// use, and allocations routed to the runtime's counting allocator.
//
//===----------------------------------------------------------------------===//

#include "remat/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

LogicalResult mlir::remat::buildTrainToLinalgStage(OpPassManager &pm) {
  pm.addPass(createConvertTrainToLinalg());
  return success();
}

LogicalResult mlir::remat::buildBufferizationStage(OpPassManager &pm,
                                                   bool arena,
                                                   bool convKernels) {
  // Identity layouts keep the step's ABI simple for the driver. No alignment
  // request: the runtime aligns every buffer itself, so the bytes requested
  // are exactly the tensor sizes the simulator counts.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.bufferAlignment = 0;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Updated parameters live in the argument buffers; the step does not
  // return them.
  pm.addPass(createRematDropDonatedResults());
  // Ownership-based deallocation frees at the end of the block; moving each
  // free to right after the last use restores remat's liveness.
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addNestedPass<func::FuncOp>(
      bufferization::createOptimizeAllocationLivenessPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Before the arena plan, which places a library convolution's workspace.
  if (convKernels)
    pm.addNestedPass<func::FuncOp>(createRematConvToRuntime());
  if (arena)
    pm.addPass(createRematPlanArena());
  return success();
}

LogicalResult mlir::remat::buildCPUToLLVMStage(OpPassManager &pm,
                                               bool convKernels) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createRematMatmulToRuntime());
  if (convKernels)
    func.addPass(createRematConvToRuntime());
  func.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createRematOutlineLoopNests());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Generic allocation functions are the runtime's counting allocator.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  // libm has no f16/bf16 functions: those compute in f32.
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

LogicalResult mlir::remat::buildCPUPipeline(OpPassManager &pm) {
  return success(succeeded(buildTrainToLinalgStage(pm)) &&
                 succeeded(buildBufferizationStage(pm)) &&
                 succeeded(buildCPUToLLVMStage(pm)));
}

ArrayRef<std::pair<StringRef, StringRef>> mlir::remat::cudaChips() {
  // The oldest PTX ISA each chip needs, within what LLVM 22 and CUDA 13's
  // ptxas both accept (CUDA 13 dropped chips before Turing).
  static const std::pair<StringRef, StringRef> chips[] = {
      {"sm_75", "+ptx80"},  {"sm_80", "+ptx80"},   {"sm_86", "+ptx80"},
      {"sm_87", "+ptx80"},  {"sm_89", "+ptx80"},   {"sm_90", "+ptx80"},
      {"sm_90a", "+ptx80"}, {"sm_100", "+ptx86"},  {"sm_100a", "+ptx86"},
      {"sm_120", "+ptx87"}, {"sm_120a", "+ptx87"},
  };
  return chips;
}

static StringRef ptxFeatures(StringRef chip) {
  for (auto [name, features] : mlir::remat::cudaChips())
    if (name == chip)
      return features;
  return "";
}

LogicalResult mlir::remat::buildGPUMappingStage(OpPassManager &pm,
                                                const CUDAOptions &options,
                                                bool outline) {
  // One kernel per loop nest, in one device module; every launch, allocation
  // and free async on one stream per step (gpu-async-region), so kernels
  // queue back to back and memory is stream-ordered in the schedule's order.
  pm.addNestedPass<func::FuncOp>(createRematMapToGPU(options.mapping));
  if (outline) {
    pm.addPass(createGpuKernelOutliningPass());
    pm.addPass(createRematMergeGPUModules());
    pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  }
  return success();
}

LogicalResult mlir::remat::buildCUDAToNVVMStage(OpPassManager &pm,
                                                const CUDAOptions &options) {
  StringRef features = ptxFeatures(options.chip);
  if (features.empty())
    return failure();
  // Upstream's gpu-lower-to-nvvm-pipeline after its outlining.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.features = features.str();
  attach.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createStripDebugInfoPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(LLVM::createNVVMOptimizeForTargetPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

LogicalResult mlir::remat::buildCUDABinaryStage(OpPassManager &pm,
                                                const CUDAOptions &options) {
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

LogicalResult mlir::remat::buildCUDAPipeline(OpPassManager &pm,
                                             const CUDAOptions &options) {
  return success(succeeded(buildBufferizationStage(pm)) &&
                 succeeded(buildGPUMappingStage(pm, options)) &&
                 succeeded(buildCUDAToNVVMStage(pm, options)) &&
                 succeeded(buildCUDABinaryStage(pm, options)));
}

namespace {
struct CUDAPipelineOptions : public PassPipelineOptions<CUDAPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("CUDA chip"),
                           llvm::cl::init("sm_90")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Device code format: isa (PTX), bin (cubin), fatbin"),
      llvm::cl::init("fatbin")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block"),
                            llvm::cl::init(256)};
  Option<bool> tileContractions{
      *this, "tile-contractions",
      llvm::cl::desc("Tile matmul-like contractions through shared memory"),
      llvm::cl::init(true)};
  Option<bool> blockReductions{
      *this, "block-reductions",
      llvm::cl::desc("A block of threads per output for reductions with few "
                     "outputs"),
      llvm::cl::init(true)};
  Option<int64_t> registerTile{
      *this, "register-tile",
      llvm::cl::desc("The largest register tile per thread (4 or 8)"),
      llvm::cl::init(4)};

  mlir::remat::CUDAOptions get() const {
    mlir::remat::CUDAOptions options;
    options.chip = chip;
    options.format = format;
    options.mapping = {blockSize, tileContractions, blockReductions,
                       registerTile};
    return options;
  }
};
} // namespace

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
      [](OpPassManager &pm) { return buildBufferizationStage(pm); });
  reg("remat-cpu-to-llvm-pipeline",
      "Lowers bufferized linalg to the LLVM dialect for the CPU",
      [](OpPassManager &pm) { return buildCPUToLLVMStage(pm); });
  PassPipelineRegistration<CUDAPipelineOptions>(
      "remat-cuda-pipeline",
      "Lowers linalg on tensors to the LLVM dialect with CUDA kernels",
      [](OpPassManager &pm, const CUDAPipelineOptions &o) {
        (void)buildCUDAPipeline(pm, o.get());
      });
}
