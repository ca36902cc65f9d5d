//===- remat-compile.cpp - Model IR to an executable training step --------===//
//
// The command line of the compiler library (remat/Compiler): parse the
// forward model, compile it for the target under a memory limit, and write
// what --emit asks for; by default a shared object and the manifest
// remat-run reads. MLIR's pass-manager options apply as in mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"
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
namespace cl = llvm::cl;

static cl::OptionCategory category("remat-compile options");
template <typename T, typename... Mods>
static cl::opt<T> flag(StringRef name, StringRef desc, Mods &&...mods) {
  return cl::opt<T>(name, cl::desc(desc), cl::cat(category), mods...);
}

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(category));
static auto outputFile =
    flag<std::string>("o", "Output file", cl::init(""), cl::value_desc("file"));
static auto target =
    flag<std::string>("target", "Target: cpu or cuda", cl::init("cpu"));
static auto chip = flag<std::string>(
    "chip", "CUDA chip (--target=cuda): sm_90, sm_80, ...", cl::init("sm_90"));
static auto cudaPath = flag<std::string>(
    "cuda-path", "CUDA toolkit with bin/ptxas (default: searched)");
static auto testGPUMapping = flag<bool>(
    "test-gpu-mapping", "CPU: map to GPU kernels, run their threads as loops",
    cl::Hidden);
static auto cpuConvKernels = flag<bool>(
    "cpu-conv-kernels", "CPU: convolutions through the runtime's kernels",
    cl::init(true));
static auto tileContractions =
    flag<bool>("gpu-tile-contractions",
               "CUDA: contractions in shared-memory tiled kernels (default)",
               cl::init(true));
static auto blockReductions = flag<bool>(
    "gpu-block-reductions",
    "CUDA: a block of threads per output of reductions with few outputs "
    "(default)",
    cl::init(true));
static auto registerTile = flag<int64_t>(
    "gpu-register-tile",
    "CUDA: the largest register tile of tiled matmuls, 4 (default) or 8",
    cl::init(4));
static auto memoryLimit = flag<std::string>(
    "memory-limit",
    "Peak memory limit (bytes, KiB/MiB/GiB, KB/MB/GB, or a percentage of the "
    "no-remat peak); none: no rematerialization");
static auto solver =
    flag<std::string>("solver", "Rematerialization solver", cl::init("auto"));
static auto timeLimit =
    flag<double>("time-limit", "Solver time limit in seconds", cl::init(10.0));
static auto searchSeconds =
    flag<double>("search-seconds", "auto: seconds of search beyond its default",
                 cl::init(0.0));
static auto learningRate =
    flag<double>("learning-rate", "SGD learning rate", cl::init(0.01));
static cl::opt<unsigned>
    optLevel("O", cl::desc("LLVM optimization level, 0 to 3 (default 3)"),
             cl::value_desc("level"), cl::Prefix, cl::init(3),
             cl::cat(category));
static auto returnGradients =
    flag<bool>("return-gradients",
               "Return parameter gradients (for remat-run --grad-check)");
static cl::opt<CompileStage> emit("emit", cl::desc("What to write"),
                                  cl::init(CompileStage::Shared),
                                  cl::cat(category));

static CompileOptions optionsFromFlags() {
  CompileOptions o;
  o.target = target;
  o.autodiff.learningRate = learningRate;
  o.autodiff.returnGradients = returnGradients;
  if (!memoryLimit.empty())
    o.remat =
        train::TrainRematOptions{memoryLimit, solver, timeLimit, searchSeconds};
  o.gpu.chip = chip;
  o.gpu.mapping.tileContractions = tileContractions;
  o.gpu.mapping.blockReductions = blockReductions;
  o.gpu.mapping.registerTile = registerTile;
  o.cudaPath = cudaPath;
  o.cpuConvKernels = cpuConvKernels;
  if (testGPUMapping)
    o.gpuMappingOnHost = test::addTestGPUToLoopsPass;
  o.optLevel = optLevel;
  o.stopAfter = emit;
  return o;
}

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
  CompileOptions options = optionsFromFlags();
  std::string error;
  if (chip.getNumOccurrences() && target == "cpu")
    return fail("--chip is for --target=cuda");
  if (failed(verifyCompileOptions(options, error)))
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
