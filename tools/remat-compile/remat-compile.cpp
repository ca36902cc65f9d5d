//===- remat-compile.cpp - Model IR to an executable training step --------===//
//
// The command line of the compiler library (remat/Compiler): parse the
// forward model, compile it for the target under a memory limit, and write
// what --emit asks for; by default a shared object and the manifest
// remat-run reads. MLIR's pass-manager options apply as in mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "Flags.h"

#include "remat/Compiler/Compiler.h"
#include "remat/InitAll.h"
#include "remat/Target/Target.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::tools;
namespace cl = llvm::cl;

static LogicalResult fail(const Twine &message) {
  llvm::errs() << "remat-compile: error: " << message << "\n";
  return failure();
}

/// Writes `path` ("-" or empty: stdout) with `write`.
static LogicalResult writeFile(StringRef path,
                               function_ref<void(raw_ostream &)> write) {
  std::string error;
  auto out = openOutputFile(path.empty() ? "-" : path, &error);
  if (!out)
    return fail(error);
  write(out->os());
  out->keep();
  return success();
}

static LogicalResult run(MLIRContext &context, llvm::SourceMgr &sourceMgr) {
  CompileOptions options;
  std::string error;
  if (failed(tools::optionsFromFlags(options, error)))
    return fail(error);
  bool linked = emit == CompileStage::Object || emit == CompileStage::Shared;
  if (linked && (outputFile.empty() || outputFile == "-"))
    return fail("-o FILE is required for --emit=obj and --emit=so");
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();
  FailureOr<CompiledStep> step = compileStep(
      *module, options,
      [](PassManager &pm) { return applyPassManagerCLOptions(pm); }, &timing);
  if (failed(step))
    return failure();
  if (!step->bytes.empty() && emit != CompileStage::Shared)
    return writeFile(outputFile, [&](raw_ostream &os) { os << step->bytes; });
  if (emit != CompileStage::Shared)
    return writeFile(outputFile, [&](raw_ostream &os) { module->print(os); });
  if (failed(linkSharedObject(step->bytes, outputFile, error)))
    return fail(error);
  step->manifest.library = llvm::sys::path::filename(outputFile).str();
  SmallString<128> manifest(outputFile.getValue());
  llvm::sys::path::replace_extension(manifest, "json");
  return writeFile(manifest, [&](raw_ostream &os) {
    os << ::remat::printManifest(step->manifest);
  });
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // Passes first: --mlir-print-ir-after and friends list them.
  mlir::remat::registerAllPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // --help lists the compiler's options and MLIR's (IR printing, timing);
  // LLVM's backend options stay reachable through --help-hidden.
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (!name.starts_with("mlir-") &&
        llvm::none_of(option->Categories, [](auto *c) {
          return c == &category || c->getName() == "Generic Options";
        }))
      option->setHiddenFlag(cl::Hidden);
  for (const CompileStageInfo &info : compileStages())
    emit.getParser().addLiteralOption(info.name, info.stage, info.description);
  cl::ParseCommandLineOptions(argc, argv, "Remat compiler\n");

  DialectRegistry registry;
  mlir::remat::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input)
    return failed(fail(error)) ? 1 : 0;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  context.printOpOnDiagnostic(false);
  return failed(run(context, sourceMgr)) ? 1 : 0;
}
