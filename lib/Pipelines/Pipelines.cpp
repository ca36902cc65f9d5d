//===- Pipelines.cpp - Named lowering pipelines ---------------------------===//
//
// Upstream passes, in an order that keeps the remat decisions: no CSE or
// canonicalization before bufferization (they could merge a recomputation
// with its original), one allocation per train op, frees moved to the last
// use, and allocations routed to the runtime's counting allocator.
//
//===----------------------------------------------------------------------===//

#include "remat/Pipelines/Pipelines.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

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

LogicalResult mlir::remat::buildCPUToLLVMStage(OpPassManager &pm,
                                               bool convKernels) {
  std::string stage =
      std::string("func.func(remat-matmul-to-runtime,") +
      (convKernels ? "remat-conv-to-runtime," : "") +
      "convert-linalg-to-loops),remat-outline-loop-nests,"
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
  std::string stage = llvm::formatv(
      "func.func(remat-map-to-gpu{{block-size={0} tile-contractions={1} "
      "block-reductions={2} register-tile={3}})",
      options.blockSize, options.tileContractions, options.blockReductions,
      options.registerTile);
  if (outline)
    stage += ",gpu-kernel-outlining,remat-merge-gpu-modules,"
             "func.func(gpu-async-region)";
  return parsePassPipeline(stage, pm);
}

LogicalResult mlir::remat::buildCUDAToNVVMStage(OpPassManager &pm,
                                                const CUDAOptions &options) {
  StringRef features = ptxFeatures(options.chip);
  if (features.empty())
    return failure();
  // Upstream's gpu-lower-to-nvvm-pipeline after its outlining.
  std::string stage = llvm::formatv(
      "convert-scf-to-cf,convert-nvvm-to-llvm,convert-func-to-llvm,"
      "expand-strided-metadata,"
      "nvvm-attach-target{{chip={0} features={1} O={2}},"
      "lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
      "canonicalize,cse,"
      "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,"
      "llvm-optimize-for-nvvm-target,canonicalize,cse,"
      "reconcile-unrealized-casts)",
      options.chip, features, options.optLevel);
  return parsePassPipeline(stage, pm);
}

LogicalResult mlir::remat::buildCUDABinaryStage(OpPassManager &pm,
                                                const CUDAOptions &options) {
  std::string toolkit =
      options.toolkit.empty() ? "" : " toolkit=" + options.toolkit;
  std::string stage = llvm::formatv(
      "gpu-to-llvm,gpu-module-to-binary{{format={0}{1}},"
      "convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts",
      options.format, toolkit);
  return parsePassPipeline(stage, pm);
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
      buildBufferizationStage);
  reg("remat-cpu-to-llvm-pipeline",
      "Lowers bufferized linalg to the LLVM dialect for the CPU",
      [](OpPassManager &pm) { return buildCPUToLLVMStage(pm); });
  PassPipelineRegistration<CUDAPipelineOptions>(
      "remat-cuda-pipeline",
      "Lowers linalg on tensors to the LLVM dialect with CUDA kernels",
      [](OpPassManager &pm, const CUDAPipelineOptions &o) {
        CUDAOptions options;
        options.chip = o.chip;
        options.format = o.format;
        options.blockSize = o.blockSize;
        options.tileContractions = o.tileContractions;
        options.blockReductions = o.blockReductions;
        (void)buildCUDAPipeline(pm, options);
      });
}
