//===- remat-compile.cpp - Model IR to an executable training step --------===//
//
// The user-facing compiler, after toyc: parse the forward model, build the
// step (train-autodiff), fit it under a memory limit (train-remat), lower it
// with the registered pipelines, and write a shared object plus the JSON
// manifest remat-run needs. --emit stops at any stage for inspection.
//
//===----------------------------------------------------------------------===//

#include "remat/Analysis/MemoryModel.h"
#include "remat/InitAll.h"
#include "remat/Remat/GraphIO.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
namespace cl = llvm::cl;
using namespace mlir::remat::train;

namespace {
enum class Emit {
  Step,
  Graph,
  Linalg,
  GPU,
  NVVM,
  PTX,
  Cubin,
  LLVMDialect,
  LLVMIR,
  Object,
  Shared
};
}

static cl::OptionCategory compileCategory("remat-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(compileCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init(""),
                                       cl::cat(compileCategory));
static cl::opt<std::string> target("target", cl::desc("Target: cpu or cuda"),
                                   cl::init("cpu"), cl::cat(compileCategory));
static cl::opt<std::string> chip("chip",
                                 cl::desc("CUDA chip (--target=cuda): sm_90, "
                                          "sm_80, ..."),
                                 cl::init("sm_90"), cl::cat(compileCategory));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("CUDA toolkit with bin/ptxas (default: $CUDA_ROOT, $CUDA_HOME, "
             "$CUDA_PATH, /usr/local/cuda, then $PATH)"),
    cl::init(""), cl::cat(compileCategory));
static cl::opt<bool> testGPUMapping(
    "test-gpu-mapping",
    cl::desc("CPU target: map the step to GPU kernels as for CUDA, then run "
             "each kernel's threads as loops on the host (tests the mapping "
             "without a GPU)"),
    cl::init(false), cl::Hidden, cl::cat(compileCategory));
static cl::opt<bool> cpuConvKernels(
    "cpu-conv-kernels",
    cl::desc("CPU target: convolutions and their gradients through the "
             "runtime's row-wise kernels (default); false: the scalar loop "
             "nests"),
    cl::init(true), cl::cat(compileCategory));
static cl::opt<bool> tileContractions(
    "gpu-tile-contractions",
    cl::desc("CUDA mapping: matmul-like contractions in shared-memory tiled "
             "kernels (default); false: one thread per output element"),
    cl::init(true), cl::cat(compileCategory));
static cl::opt<bool> blockReductions(
    "gpu-block-reductions",
    cl::desc("CUDA mapping: reductions with few outputs (losses, row "
             "statistics, bias gradients) split over a block of threads per "
             "output (default); false: one thread per output"),
    cl::init(true), cl::cat(compileCategory));
static cl::opt<int64_t> registerTile(
    "gpu-register-tile",
    cl::desc("CUDA mapping: the largest register tile per thread of tiled "
             "matmuls: 4 (default: up to 4 x 4 outputs per thread) or 8 "
             "(8 x 8 where both output sides are at least 64; not yet timed "
             "on a GPU)"),
    cl::init(4), cl::cat(compileCategory));
static cl::opt<std::string>
    memoryLimit("memory-limit",
                cl::desc("Peak memory limit (bytes, KiB/MiB/GiB, KB/MB/GB, "
                         "or a percentage of the no-remat peak); none: no "
                         "rematerialization"),
                cl::init(""), cl::cat(compileCategory));
static cl::opt<std::string> solver("solver",
                                   cl::desc("Rematerialization solver"),
                                   cl::init("auto"), cl::cat(compileCategory));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("Solver time limit in seconds"),
                                 cl::init(10.0), cl::cat(compileCategory));
static cl::opt<double> searchSeconds(
    "search-seconds",
    cl::desc("auto: seconds of search beyond its default (restarts, then "
             "annealing)"),
    cl::init(0.0), cl::cat(compileCategory));
static cl::opt<double> learningRate("learning-rate",
                                    cl::desc("SGD learning rate"),
                                    cl::init(0.01), cl::cat(compileCategory));
static cl::opt<unsigned>
    optLevel("O", cl::desc("LLVM optimization level, 0 to 3 (default 3)"),
             cl::value_desc("level"), cl::Prefix, cl::init(3),
             cl::cat(compileCategory));
static cl::opt<bool> returnGradients(
    "return-gradients",
    cl::desc("Return parameter gradients (for remat-run --grad-check)"),
    cl::init(false), cl::cat(compileCategory));
static cl::opt<Emit> emit(
    "emit", cl::desc("What to write"), cl::init(Emit::Shared),
    cl::values(
        clEnumValN(Emit::Step, "step", "the train step after autodiff/remat"),
        clEnumValN(Emit::Graph, "graph",
                   "the remat graph of the step, as JSON for remat-solve"),
        clEnumValN(Emit::Linalg, "linalg", "linalg on tensors"),
        clEnumValN(Emit::GPU, "gpu",
                   "CUDA: the GPU dialect, kernels outlined, launches async"),
        clEnumValN(Emit::NVVM, "nvvm", "CUDA: kernels in the NVVM dialect"),
        clEnumValN(Emit::PTX, "ptx", "CUDA: the kernels' PTX"),
        clEnumValN(Emit::Cubin, "cubin", "CUDA: the kernels' cubin (ptxas)"),
        clEnumValN(Emit::LLVMDialect, "llvm-mlir", "the LLVM dialect"),
        clEnumValN(Emit::LLVMIR, "llvm", "LLVM IR after optimization"),
        clEnumValN(Emit::Object, "obj", "an object file"),
        clEnumValN(Emit::Shared, "so",
                   "a shared object and its manifest (default)")),
    cl::cat(compileCategory));

static std::string dtypeOf(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  if (e.isInteger(64))
    return "i64";
  if (e.isInteger(32))
    return "i32";
  if (e.isF16())
    return "f16";
  if (e.isBF16())
    return "bf16";
  return e.isF64() ? "f64" : e.isF32() ? "f32" : "";
}

/// What the driver needs to fill an argument sensibly, from the ops that use
/// it: the class count or vocabulary bounding labels and token indices, and
/// for parameters the PyTorch-like initialization (normalization weights 1,
/// biases 0, weights He-uniform over their fan-in).
static void describeFill(func::FuncOp step, BlockArgument arg,
                         llvm::json::Object &entry) {
  auto type = cast<RankedTensorType>(arg.getType());
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    unsigned n = use.getOperandNumber();
    auto dim = [&](unsigned operand, unsigned d) {
      return cast<RankedTensorType>(user->getOperand(operand).getType())
          .getDimSize(d);
    };
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(user) && n == 1) {
      entry["range"] = dim(0, 1);
      return;
    }
    if (isa<EmbeddingOp>(user) && n == 1) {
      entry["range"] = dim(0, 0);
      return;
    }
    if (isa<EmbeddingGradOp>(user) && n == 1) {
      entry["range"] =
          cast<RankedTensorType>(user->getResult(0).getType()).getDimSize(0);
      return;
    }
    if (isa<LayerNormOp, BatchNormOp>(user) && (n == 1 || n == 2)) {
      entry["init"] = llvm::json::Object{{"constant", n == 1 ? 1.0 : 0.0}};
      return;
    }
  }
  auto role = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                TrainDialect::kRoleAttr);
  if (!role || role.getValue() != "param" ||
      !isa<FloatType>(type.getElementType()))
    return;
  int64_t largest = 1;
  for (int64_t d : type.getShape())
    largest = std::max(largest, d);
  if (type.getNumElements() == largest) {
    entry["init"] = llvm::json::Object{{"constant", 0.0}}; // a bias
    return;
  }
  // Matmul weights are [in, out]; convolution weights [F, C, KH, KW];
  // embedding tables uniform in [-1, 1).
  int64_t fanIn = type.getRank() == 2
                      ? type.getDimSize(0)
                      : type.getNumElements() / type.getDimSize(0);
  double bound = std::sqrt(6.0 / static_cast<double>(fanIn));
  for (Operation *user : arg.getUsers())
    if (isa<EmbeddingOp>(user))
      bound = 1.0;
  entry["init"] = llvm::json::Object{{"uniform", bound}};
}

static std::string describe(Type type) {
  auto t = cast<RankedTensorType>(type);
  std::string s = dtypeOf(type) + "[";
  for (auto [i, d] : llvm::enumerate(t.getShape()))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}

static llvm::json::Array shapeOf(Type type) {
  llvm::json::Array shape;
  for (int64_t d : cast<RankedTensorType>(type).getShape())
    shape.push_back(d);
  return shape;
}

namespace {
/// What the manifest says about the step, gathered before lowering.
struct StepInfo {
  std::string function, signature;
  llvm::json::Array arguments, results;
  int64_t predictedPeak = 0, fixedBytes = 0, paramBytes = 0, dataBytes = 0;
  double predictedCost = 0, baselineCost = 0;
  std::optional<int64_t> limit;
  int64_t kernels = 0;
};
} // namespace

static LogicalResult describeStep(func::FuncOp step, StepInfo &info) {
  info.function = step.getName().str();
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    Type type = step.getArgumentTypes()[i];
    if (dtypeOf(type).empty())
      return step.emitError("argument ")
             << i << " has an element type the runtime cannot fill (f32, "
             << "f64, i32 or i64)";
    auto role = step.getArgAttrOfType<StringAttr>(i, TrainDialect::kRoleAttr);
    auto name = step.getArgAttrOfType<StringAttr>(i, TrainDialect::kNameAttr);
    llvm::json::Object entry{
        {"name", name ? name.str() : "arg" + std::to_string(i)},
        {"role", role ? role.str() : "input"},
        {"dtype", dtypeOf(type)},
        {"shape", shapeOf(type)}};
    describeFill(step, step.getArgument(i), entry);
    info.arguments.push_back(std::move(entry));
    info.signature += describe(type) + ";";
  }
  info.signature += "->";
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto role =
        step.getResultAttrOfType<StringAttr>(i, TrainDialect::kRoleAttr);
    // Updated parameters are written in place and not returned.
    if (role && role.getValue() == "updated_param")
      continue;
    Type type = step.getResultTypes()[i];
    llvm::json::Object result{{"role", role ? role.str() : "output"},
                              {"dtype", dtypeOf(type)},
                              {"shape", shapeOf(type)}};
    if (auto param =
            step.getResultAttrOfType<IntegerAttr>(i, TrainDialect::kParamAttr))
      result["param"] = param.getInt();
    info.results.push_back(std::move(result));
    info.signature += describe(type) + ";";
  }
  return success();
}

static FailureOr<func::FuncOp> findModel(ModuleOp module) {
  SmallVector<func::FuncOp> models;
  for (auto func : module.getOps<func::FuncOp>()) {
    bool isModel = func->hasAttr(TrainDialect::kStepAttr);
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      isModel |= static_cast<bool>(func.getArgAttr(i, TrainDialect::kRoleAttr));
    if (isModel)
      models.push_back(func);
  }
  if (models.size() != 1)
    return module.emitError("expects exactly one model function (arguments "
                            "with 'train.role'), found ")
           << models.size();
  return models.front();
}

static LogicalResult runPasses(ModuleOp module, StringRef pipeline) {
  PassManager pm(module->getName());
  if (failed(parsePassPipeline(pipeline, pm)))
    return module.emitError("internal error: bad pipeline ") << pipeline;
  return pm.run(module);
}

/// Opens `path` ("-": stdout), lets `write` fill it and keeps it if that
/// succeeds.
static LogicalResult
writeFile(StringRef path,
          function_ref<LogicalResult(llvm::raw_fd_ostream &)> write) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out) {
    llvm::errs() << "remat-compile: " << error << "\n";
    return failure();
  }
  if (failed(write(out->os())))
    return failure();
  out->keep();
  return success();
}

static StringRef outputOrStdout() {
  return outputFile.empty() ? StringRef("-") : StringRef(outputFile);
}

static LogicalResult printModule(ModuleOp module) {
  return writeFile(outputOrStdout(), [&](llvm::raw_fd_ostream &os) {
    module.print(os);
    return success();
  });
}

/// Adds `remat_step(void **args)`, which calls the step's C interface with
/// args[0] the result struct and args[1..] the argument descriptors, and the
/// signature string remat-run checks its manifest against.
static LogicalResult addEntryPoints(llvm::Module &m, StringRef function,
                                    StringRef signature, StringRef targetName) {
  llvm::Function *ciface = m.getFunction(("_mlir_ciface_" + function).str());
  if (!ciface) {
    llvm::errs() << "remat-compile: internal error: no C interface for '"
                 << function << "'\n";
    return failure();
  }
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                       "remat_step", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < ciface->arg_size(); ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), i);
    args.push_back(b.CreateLoad(ptr, slot));
  }
  b.CreateCall(ciface, args);
  b.CreateRetVoid();
  llvm::Constant *text =
      b.CreateGlobalString(signature, "remat_signature_text", 0, &m);
  new llvm::GlobalVariable(m, ptr, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           "remat_step_signature");
  // remat-run checks the manifest's target against the library's.
  llvm::Constant *targetText =
      b.CreateGlobalString(targetName, "remat_target_text", 0, &m);
  new llvm::GlobalVariable(m, ptr, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, targetText,
                           "remat_step_target");
  return success();
}

static std::unique_ptr<llvm::TargetMachine> hostMachine() {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t) {
    llvm::errs() << "remat-compile: " << error << "\n";
    return nullptr;
  }
  llvm::SubtargetFeatures features;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.getKey(), f.getValue());
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

static LogicalResult writeManifest(const StepInfo &info, StringRef soPath) {
  llvm::json::Object manifest{
      {"format", "remat-step/1"},
      {"target", target.getValue()},
      {"library", llvm::sys::path::filename(soPath).str()},
      {"entry", "remat_step"},
      {"function", info.function},
      {"signature", info.signature},
      {"arguments", llvm::json::Array(info.arguments)},
      {"results", llvm::json::Array(info.results)},
      {"predicted_peak_bytes", info.predictedPeak},
      {"fixed_bytes", info.fixedBytes},
      {"param_bytes", info.paramBytes},
      {"data_bytes", info.dataBytes},
      {"predicted_cost_flops", info.predictedCost},
      {"baseline_cost_flops", info.baselineCost},
      {"memory_limit_bytes", info.limit ? llvm::json::Value(*info.limit)
                                        : llvm::json::Value(nullptr)},
      {"solver", info.limit ? solver.getValue() : "none"},
  };
  // A schedule from a timed search depends on the machine that compiled it.
  if (info.limit && searchSeconds > 0)
    manifest["search_seconds"] = searchSeconds.getValue();
  if (target == "cuda") {
    manifest["chip"] = chip.getValue();
    manifest["device_code"] = "fatbin";
    manifest["kernels"] = info.kernels;
  }
  SmallString<128> path(soPath);
  llvm::sys::path::replace_extension(path, "json");
  return writeFile(path, [&](llvm::raw_fd_ostream &os) {
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
       << "\n";
    return success();
  });
}

/// The roles and names are in the manifest; LLVM IR has no place for them
/// (translation would warn about each). Outlined loop nests become noinline.
static void prepareForTranslation(ModuleOp module) {
  auto keep = [](ArrayRef<NamedAttribute> attrs) {
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute a : attrs)
      if (!a.getName().getValue().starts_with("train."))
        kept.push_back(a);
    return kept;
  };
  module.walk([&](FunctionOpInterface func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      func.setArgAttrs(i, keep(func.getArgAttrs(i)));
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.setResultAttrs(i, keep(func.getResultAttrs(i)));
    func->removeAttr(TrainDialect::kStepAttr);
  });
  // remat-outline-loop-nests's functions stay out of line, so that LLVM
  // optimizes each distinct nest once (func-to-llvm drops `no_inline`).
  module.walk([](LLVM::LLVMFuncOp func) {
    if (func->removeAttr("remat.outlined"))
      func.setNoInline(true);
  });
}

static LogicalResult checkTargetOptions() {
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "remat-compile: unknown target '" << target
                 << "'; expected: cpu, cuda\n";
    return failure();
  }
  if (registerTile != 4 && registerTile != 8) {
    llvm::errs() << "remat-compile: --gpu-register-tile must be 4 or 8, not "
                 << registerTile << "\n";
    return failure();
  }
  if (target == "cuda") {
    if (testGPUMapping) {
      llvm::errs() << "remat-compile: --test-gpu-mapping is for --target=cpu\n";
      return failure();
    }
    auto chips = mlir::remat::cudaChips();
    if (llvm::none_of(chips, [](auto c) { return c.first == chip; })) {
      llvm::errs() << "remat-compile: unknown chip '" << chip
                   << "'; expected one of:";
      for (auto c : chips)
        llvm::errs() << " " << c.first;
      llvm::errs() << "\n";
      return failure();
    }
    return success();
  }
  if (chip.getNumOccurrences()) {
    llvm::errs() << "remat-compile: --chip is for --target=cuda\n";
    return failure();
  }
  if (emit == Emit::GPU || emit == Emit::NVVM || emit == Emit::PTX ||
      emit == Emit::Cubin) {
    llvm::errs() << "remat-compile: --emit=gpu, nvvm, ptx and cubin are for "
                    "--target=cuda\n";
    return failure();
  }
  return success();
}

/// Writes the device code of the step's one gpu.binary (PTX text or cubin
/// bytes) to the output.
static LogicalResult writeDeviceCode(ModuleOp module) {
  SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
  if (binaries.size() != 1 || binaries.front().getObjects().size() != 1)
    return module.emitError("internal error: expected one device binary, "
                            "found ")
           << binaries.size();
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  return writeFile(outputOrStdout(), [&](llvm::raw_fd_ostream &os) {
    os << object.getObject().getValue();
    return success();
  });
}

/// The CUDA toolkit holding `tools` (ptxas, and fatbinary for a fatbin), in
/// upstream's search order: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, the usual
/// install path, then $PATH; only --cuda-path when given. Empty, with a
/// message, when there is none.
static std::string findCUDAToolkit(ArrayRef<StringRef> tools) {
  auto has = [&](StringRef dir) {
    return llvm::all_of(tools, [&](StringRef tool) {
      SmallString<128> path(dir);
      llvm::sys::path::append(path, "bin", tool);
      return llvm::sys::fs::can_execute(path);
    });
  };
  if (!cudaPath.empty()) {
    if (has(cudaPath))
      return cudaPath;
    llvm::errs() << "remat-compile: error: --cuda-path=" << cudaPath
                 << " has no bin/" << llvm::join(tools, " or bin/")
                 << "; --emit=gpu, nvvm and ptx need neither\n";
    return "";
  }
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      if (has(dir))
        return dir;
  if (has("/usr/local/cuda"))
    return "/usr/local/cuda";
  if (llvm::ErrorOr<std::string> ptxas =
          llvm::sys::findProgramByName(tools.front())) {
    std::string dir =
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
            .str();
    if (has(dir))
      return dir;
  }
  llvm::errs() << "remat-compile: error: the CUDA toolkit's "
               << llvm::join(tools, " and ")
               << " were not found (looked in $CUDA_ROOT, $CUDA_HOME, "
                  "$CUDA_PATH, /usr/local/cuda and $PATH); --emit=gpu, nvvm "
                  "and ptx need neither\n";
  return "";
}

/// Lowers bufferizable linalg to the LLVM dialect with embedded device code,
/// stopping early for the CUDA --emit stages. Returns true when it wrote the
/// requested output itself.
static FailureOr<bool> lowerForCUDA(ModuleOp module, StepInfo &info) {
  auto wrote = [](LogicalResult r) -> FailureOr<bool> {
    if (failed(r))
      return failure();
    return true;
  };
  mlir::remat::CUDAOptions options;
  options.chip = chip;
  options.tileContractions = tileContractions;
  options.blockReductions = blockReductions;
  options.registerTile = registerTile;
  options.format = emit == Emit::PTX     ? "isa"
                   : emit == Emit::Cubin ? "bin"
                                         : "fatbin";
  if (emit != Emit::GPU && emit != Emit::NVVM && emit != Emit::PTX) {
    SmallVector<StringRef> tools = {"ptxas"};
    if (options.format == "fatbin")
      tools.push_back("fatbinary");
    options.toolkit = findCUDAToolkit(tools);
    if (options.toolkit.empty())
      return failure();
  }
  auto runStage = [&](function_ref<LogicalResult(OpPassManager &)> build) {
    PassManager pm(module->getName());
    return success(succeeded(build(pm)) && succeeded(pm.run(module)));
  };
  if (failed(runStage([&](OpPassManager &pm) {
        return success(
            succeeded(mlir::remat::buildBufferizationStage(pm)) &&
            succeeded(mlir::remat::buildGPUMappingStage(pm, options)));
      })))
    return failure();
  for (auto m : module.getOps<gpu::GPUModuleOp>())
    info.kernels += llvm::range_size(m.getOps<gpu::GPUFuncOp>());
  if (emit == Emit::GPU)
    return wrote(printModule(module));
  if (failed(runStage([&](OpPassManager &pm) {
        return mlir::remat::buildCUDAToNVVMStage(pm, options);
      })))
    return failure();
  if (emit == Emit::NVVM)
    return wrote(printModule(module));
  if (failed(runStage([&](OpPassManager &pm) {
        return mlir::remat::buildCUDABinaryStage(pm, options);
      })))
    return failure();
  if (emit == Emit::PTX || emit == Emit::Cubin)
    return wrote(writeDeviceCode(module));
  return false;
}

/// A number as pass-option text, to the last digit: formatv's default keeps
/// two decimals, which made --learning-rate=0.001 a rate of 0.
static std::string optionText(double value) {
  return llvm::formatv("{0}", llvm::format("%.17g", value)).str();
}

static LogicalResult compile(MLIRContext &context, llvm::SourceMgr &sourceMgr) {
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  if (failed(checkTargetOptions()))
    return failure();
  FailureOr<func::FuncOp> model = findModel(*module);
  if (failed(model))
    return failure();

  std::string autodiff = llvm::formatv(
      "func.func(train-autodiff{{learning-rate={0} return-gradients={1}})",
      optionText(learningRate), returnGradients ? "true" : "false");
  if (failed(runPasses(*module, autodiff)))
    return failure();
  StepInfo info;
  FailureOr<mlir::remat::MemoryReport> before =
      mlir::remat::analyzeMemory(*model);
  if (failed(before))
    return failure();
  info.baselineCost = before->cost;
  if (!memoryLimit.empty()) {
    std::string remat = llvm::formatv(
        "func.func(train-remat{{memory-limit={0} solver={1} time-limit={2} "
        "search-seconds={3}})",
        memoryLimit.getValue(), solver.getValue(), optionText(timeLimit),
        optionText(searchSeconds));
    if (failed(runPasses(*module, remat)))
      return failure();
    std::string error;
    info.limit =
        *mlir::remat::parseMemoryLimit(memoryLimit, before->peakBytes, error);
  }
  FailureOr<mlir::remat::MemoryReport> after =
      mlir::remat::analyzeMemory(*model);
  if (failed(after) || failed(describeStep(*model, info)))
    return failure();
  info.predictedPeak = after->peakBytes;
  info.predictedCost = after->cost;
  info.fixedBytes = after->fixedBytes;
  info.paramBytes = after->paramBytes;
  info.dataBytes = after->dataBytes;
  if (emit == Emit::Step)
    return printModule(*module);
  if (emit == Emit::Graph) {
    FailureOr<mlir::remat::StepGraph> step =
        mlir::remat::buildStepGraph(*model);
    if (failed(step))
      return failure();
    return writeFile(outputOrStdout(), [&](llvm::raw_fd_ostream &os) {
      os << ::remat::writeGraph(step->graph, info.function) << "\n";
      return success();
    });
  }

  PassManager pm(module.get()->getName());
  if (failed(mlir::remat::buildTrainToLinalgStage(pm)) ||
      failed(pm.run(*module)))
    return failure();
  if (emit == Emit::Linalg)
    return printModule(*module);
  (*model)->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
  if (target == "cuda") {
    FailureOr<bool> done = lowerForCUDA(*module, info);
    if (failed(done) || *done)
      return done;
  } else {
    PassManager lower(module.get()->getName());
    mlir::remat::CUDAOptions mapping;
    mapping.tileContractions = tileContractions;
    mapping.blockReductions = blockReductions;
    mapping.registerTile = registerTile;
    if (failed(mlir::remat::buildBufferizationStage(lower)) ||
        (testGPUMapping &&
         (failed(mlir::remat::buildGPUMappingStage(lower, mapping,
                                                   /*outline=*/false)) ||
          failed(parsePassPipeline("func.func(remat-test-gpu-to-loops)",
                                   lower)))) ||
        // The GPU mapping's loops are what --test-gpu-mapping checks.
        failed(mlir::remat::buildCPUToLLVMStage(lower, cpuConvKernels &&
                                                           !testGPUMapping)) ||
        failed(lower.run(*module)))
      return failure();
  }
  if (emit == Emit::LLVMDialect)
    return printModule(*module);
  prepareForTranslation(*module);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, info.function);
  if (!llvmModule) {
    llvm::errs() << "remat-compile: translation to LLVM IR failed\n";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine = hostMachine();
  if (!machine)
    return failure();
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (failed(
          addEntryPoints(*llvmModule, info.function, info.signature, target)))
    return failure();
  if (llvm::Error err = makeOptimizingTransformer(optLevel, 0, machine.get())(
          llvmModule.get())) {
    llvm::errs() << "remat-compile: LLVM optimization failed: "
                 << llvm::toString(std::move(err)) << "\n";
    return failure();
  }
  if (emit == Emit::LLVMIR) {
    return writeFile(outputOrStdout(), [&](llvm::raw_fd_ostream &os) {
      llvmModule->print(os, nullptr);
      return success();
    });
  }

  if (outputFile.empty() || outputFile == "-") {
    llvm::errs() << "remat-compile: -o FILE is required for --emit=obj and "
                    "--emit=so\n";
    return failure();
  }
  SmallString<128> objPath(outputFile.getValue());
  if (emit == Emit::Shared)
    objPath += ".o";
  LogicalResult written =
      writeFile(objPath, [&](llvm::raw_fd_ostream &os) -> LogicalResult {
        llvm::legacy::PassManager codegen;
        if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                         llvm::CodeGenFileType::ObjectFile)) {
          llvm::errs() << "remat-compile: the target cannot emit objects\n";
          return failure();
        }
        codegen.run(*llvmModule);
        return success();
      });
  if (failed(written))
    return failure();
  if (emit == Emit::Object)
    return success();

  // Link with the system compiler driver; the runtime's symbols stay
  // undefined and are resolved against remat-run when it loads the step.
  const char *cc = std::getenv("CC");
  llvm::ErrorOr<std::string> linker =
      llvm::sys::findProgramByName(cc && *cc ? cc : "cc");
  if (!linker) {
    llvm::errs() << "remat-compile: no C compiler driver ('cc' or $CC) to "
                    "link the shared object\n";
    return failure();
  }
  SmallVector<StringRef> argv = {*linker, "-shared", "-o", outputFile, objPath};
  std::string error;
  int rc =
      llvm::sys::ExecuteAndWait(*linker, argv, std::nullopt, {}, 0, 0, &error);
  llvm::sys::fs::remove(objPath);
  if (rc != 0) {
    llvm::errs() << "remat-compile: linking failed (" << *linker << " exited "
                 << rc << ") " << error << "\n";
    return failure();
  }
  return writeManifest(info, outputFile);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  mlir::remat::registerAllPasses();
  // --help lists the compiler's options and MLIR's (IR printing, timing);
  // LLVM's backend options stay reachable through --help-hidden (which
  // cl::HideUnrelatedOptions would hide them from too).
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    bool shown = entry.first.starts_with("mlir-") ||
                 llvm::any_of(option->Categories, [](auto *category) {
                   return category == &compileCategory ||
                          category->getName() == "Generic Options";
                 });
    if (!shown)
      option->setHiddenFlag(cl::Hidden);
  }
  cl::ParseCommandLineOptions(argc, argv, "Remat compiler\n");
  if (optLevel > 3) {
    llvm::errs() << "remat-compile: error: -O" << optLevel
                 << " is not a level; use -O0 to -O3\n";
    return 1;
  }

  DialectRegistry registry;
  mlir::remat::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "remat-compile: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  context.printOpOnDiagnostic(false);
  return failed(compile(context, sourceMgr)) ? 1 : 0;
}
