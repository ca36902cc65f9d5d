//===- Compiler.h - Forward model to compiled training step -----*- C++ -*-===//
//
// The compiler as a library: options in one struct, and compileStep, which
// builds the step (train-autodiff), fits it under the memory limit
// (train-remat), lowers it for the target and generates code, stopping at
// any stage. remat-compile is a command line over this.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_COMPILER_COMPILER_H
#define REMAT_COMPILER_COMPILER_H

#include "remat/Dialect/Train/Transforms/Passes.h"
#include "remat/Manifest.h"
#include "remat/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <functional>
#include <optional>

namespace mlir::remat {

/// Where compilation stops, in pipeline order.
enum class CompileStage {
  Step,        // train dialect after autodiff and remat
  Graph,       // the remat graph of the step, as remat-solve's JSON
  Linalg,      // linalg on tensors
  GPU,         // CUDA: kernels outlined into the GPU dialect
  NVVM,        // CUDA: kernels in NVVM
  PTX,         // CUDA: the kernels' PTX
  Cubin,       // CUDA: the kernels' cubin
  LLVMDialect, // the LLVM dialect
  LLVMIR,      // LLVM IR, optimized
  Object,      // an object file
  Shared,      // the object again, which the caller links into a shared
               // object beside the manifest (linkSharedObject)
};

/// Each stage's name on the command line (--emit) and what it holds.
struct CompileStageInfo {
  CompileStage stage;
  StringRef name, description;
};
ArrayRef<CompileStageInfo> compileStages();

/// Every choice a compilation makes. The pass options are the passes' own
/// generated structs, so a value reaches its pass unconverted.
struct CompileOptions {
  /// "cpu" or "cuda".
  std::string target = "cpu";
  train::TrainAutodiffOptions autodiff;
  /// Absent: no rematerialization (the step as autodiff built it).
  std::optional<train::TrainRematOptions> remat;
  /// The chip, device code and kernel choices (CUDA, and the GPU mapping
  /// the CPU target can test).
  CUDAOptions gpu;
  /// The CUDA toolkit: empty searches $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH,
  /// /usr/local/cuda and $PATH.
  std::string cudaPath;
  /// CPU: convolutions through the runtime's kernels (else loop nests).
  bool cpuConvKernels = true;
  /// CPU: f32 convolutions through oneDNN, where the runtime has it
  /// (remat-conv-library), the others through the runtime's kernels.
  bool cpuConvLibrary = false;
  /// Their layouts (remat-conv-library): "auto" (per convolution, plain
  /// or else blocked, where the workspace does not raise the step's floor),
  /// "plain" or "blocked". Not tied to the memory limit: builds with and
  /// without remat run the same kernels and give the same bits.
  std::string cpuConvLayout = "auto";
  /// What prices recomputation: "flops", "roofline" (on the target's
  /// built-in description, or `targetDesc`, a JSON file) or "profile" (the
  /// op times in `costProfile`, from remat-run --profile, which implies it).
  std::string costModel = "flops";
  std::string targetDesc, costProfile;
  /// CPU: a profiling build, each priced op between the runtime's timers
  /// (train-profile-ops), for remat-run --profile.
  bool profileOps = false;
  /// Intermediate buffers at compile-time offsets in one arena
  /// (remat-plan-arena) instead of one allocation each.
  bool arena = true;
  /// CPU, for tests: when set, the step is mapped to GPU kernels as for
  /// CUDA and these passes, added after the mapping, must turn the kernels
  /// back into host code (remat-compile's --test-gpu-mapping adds
  /// test/lib's remat-test-gpu-to-loops).
  std::function<void(OpPassManager &)> gpuMappingOnHost;
  /// LLVM optimization level of the host code, 0 to 3.
  unsigned optLevel = 3;
  CompileStage stopAfter = CompileStage::Shared;
};

/// Sets the optimizer from `spec`: `sgd`, `adam` or `adamw`, optionally
/// followed by `:` and comma-separated `key=value` hyperparameters
/// (momentum, dampening, nesterov, weight-decay, beta1, beta2, eps), e.g.
/// `adamw:weight-decay=0.05,beta2=0.95`. On failure sets `error`.
LogicalResult parseOptimizer(StringRef spec,
                             train::TrainAutodiffOptions &options,
                             std::string &error);

/// Checks option combinations before any work; the message names the
/// offending option.
LogicalResult verifyCompileOptions(const CompileOptions &options,
                                   std::string &error);

/// What compileStep produced.
struct CompiledStep {
  /// The manifest's description of the step (library name left empty).
  ::remat::Manifest manifest;
  /// The output of a stage past the MLIR module: the graph's JSON, device
  /// code, LLVM IR text or an object file. Empty when the stage is IR held
  /// in the module itself.
  std::string bytes;
};

/// Compiles the forward model in `module` (one function with `train.role`
/// arguments) up to `options.stopAfter`, rewriting `module` in place.
/// `configure` is applied to every pass manager (IR printing, crash
/// reproducers); `timing`, when given, times each stage including LLVM's
/// code generation.
FailureOr<CompiledStep>
compileStep(ModuleOp module, const CompileOptions &options,
            function_ref<LogicalResult(PassManager &)> configure = {},
            TimingScope *timing = nullptr);

} // namespace mlir::remat

#endif // REMAT_COMPILER_COMPILER_H
