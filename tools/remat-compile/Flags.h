//===- Flags.h - remat-compile's command-line options -----------*- C++ -*-===//

#ifndef REMAT_TOOLS_REMAT_COMPILE_FLAGS_H
#define REMAT_TOOLS_REMAT_COMPILE_FLAGS_H

#include "remat/Compiler/Compiler.h"

#include "llvm/Support/CommandLine.h"

namespace mlir::remat::tools {

extern llvm::cl::OptionCategory category;
extern llvm::cl::opt<std::string> inputFile, outputFile;
extern llvm::cl::opt<CompileStage> emit;

/// The CompileOptions the flags ask for; fails with `error` on a bad value
/// or combination.
LogicalResult optionsFromFlags(CompileOptions &options, std::string &error);

} // namespace mlir::remat::tools

#endif // REMAT_TOOLS_REMAT_COMPILE_FLAGS_H
