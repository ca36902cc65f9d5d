//===- Target.h - Host code generation and the CUDA toolkit -----*- C++ -*-===//
//
// What turns the lowered step into files: the C entry point remat-run
// calls, the host target machine, object emission, linking, and the search
// for the CUDA toolkit that gpu-module-to-binary needs.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_TARGET_TARGET_H
#define REMAT_TARGET_TARGET_H

#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::remat {

/// Adds `remat_step(void **args)`, which calls `function`'s C interface with
/// args[0] the result struct and args[1..] the argument descriptors, and
/// the strings remat-run checks its manifest against: the signature and the
/// target.
LogicalResult addEntryPoints(llvm::Module &module, StringRef function,
                             StringRef signature, StringRef target,
                             std::string &error);

/// A target machine for the host CPU with all its features.
std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(std::string &error);

/// Optimizes `module` at `optLevel` for `machine`.
LogicalResult optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                             unsigned optLevel, std::string &error);

/// The object file of `module`.
LogicalResult emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                         std::string &object, std::string &error);

/// Links an object file into the shared object `path` with the system
/// compiler driver ($CC or cc); the runtime's symbols stay undefined and
/// resolve against the process that loads the step.
LogicalResult linkSharedObject(StringRef object, StringRef path,
                               std::string &error);

/// The CUDA toolkit holding `tools` (bin/ptxas, ...): `explicitPath` when
/// given, else upstream's search order ($CUDA_ROOT, $CUDA_HOME, $CUDA_PATH,
/// /usr/local/cuda, then $PATH). The message says where it looked.
FailureOr<std::string> findCUDAToolkit(StringRef explicitPath,
                                       ArrayRef<StringRef> tools,
                                       std::string &error);

} // namespace mlir::remat

#endif // REMAT_TARGET_TARGET_H
