//===- Compiler.cpp - Forward model to compiled training step -------------===//
//
// The stages in order, each a pass manager built from the registered stage
// functions, with the step's description taken between remat and lowering
// (the lowered step no longer has roles or a memory model).
//
//===----------------------------------------------------------------------===//

#include "remat/Compiler/Compiler.h"

#include "Internal.h"
#include "remat/Analysis/MemoryModel.h"
#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"
#include "remat/Remat/GraphIO.h"
#include "remat/Target/Target.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using namespace mlir::remat;

ArrayRef<CompileStageInfo> mlir::remat::compileStages() {
  static const CompileStageInfo stages[] = {
      {CompileStage::Step, "step", "the train step after autodiff/remat"},
      {CompileStage::Graph, "graph",
       "the remat graph of the step, as JSON for remat-solve"},
      {CompileStage::Linalg, "linalg", "linalg on tensors"},
      {CompileStage::GPU, "gpu",
       "CUDA: the GPU dialect, kernels outlined, launches async"},
      {CompileStage::NVVM, "nvvm", "CUDA: kernels in the NVVM dialect"},
      {CompileStage::PTX, "ptx", "CUDA: the kernels' PTX"},
      {CompileStage::Cubin, "cubin", "CUDA: the kernels' cubin (ptxas)"},
      {CompileStage::LLVMDialect, "llvm-mlir", "the LLVM dialect"},
      {CompileStage::LLVMIR, "llvm", "LLVM IR after optimization"},
      {CompileStage::Object, "obj", "an object file"},
      {CompileStage::Shared, "so", "a shared object and its manifest"},
  };
  return stages;
}

LogicalResult mlir::remat::parseOptimizer(StringRef spec,
                                          train::TrainAutodiffOptions &o,
                                          std::string &error) {
  auto [name, rest] = spec.split(':');
  if (name != "sgd" && name != "adam" && name != "adamw") {
    error =
        ("unknown optimizer '" + name + "'; expected sgd, adam or adamw").str();
    return failure();
  }
  o.optimizer = name.str();
  SmallVector<StringRef> items;
  rest.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    if (key == "nesterov" &&
        (value.empty() || value == "true" || value == "false")) {
      o.nesterov = value != "false";
      continue;
    }
    double *field = StringSwitch<double *>(key)
                        .Case("momentum", &o.momentum)
                        .Case("dampening", &o.dampening)
                        .Case("weight-decay", &o.weightDecay)
                        .Case("beta1", &o.beta1)
                        .Case("beta2", &o.beta2)
                        .Case("eps", &o.eps)
                        .Default(nullptr);
    if (!field) {
      error = ("unknown optimizer option '" + key +
               "'; expected momentum, dampening, nesterov, weight-decay, "
               "beta1, beta2 or eps")
                  .str();
      return failure();
    }
    if (value.trim().getAsDouble(*field) || !std::isfinite(*field)) {
      error =
          ("optimizer option '" + key + "' needs a number, got '" + value + "'")
              .str();
      return failure();
    }
  }
  return success();
}

LogicalResult mlir::remat::verifyCompileOptions(const CompileOptions &o,
                                                std::string &error) {
  auto fail = [&](const Twine &message) {
    error = message.str();
    return failure();
  };
  if (o.target != "cpu" && o.target != "cuda")
    return fail("unknown target '" + o.target + "'; expected: cpu, cuda");
  int64_t tile = o.gpu.mapping.registerTile;
  if (tile != 4 && tile != 8)
    return fail("--gpu-register-tile must be 4 or 8, not " + Twine(tile));
  if (o.optLevel > 3)
    return fail("-O" + Twine(o.optLevel) + " is not a level; use -O0 to -O3");
  bool deviceStage =
      o.stopAfter == CompileStage::GPU || o.stopAfter == CompileStage::NVVM ||
      o.stopAfter == CompileStage::PTX || o.stopAfter == CompileStage::Cubin;
  if (o.cpuConvLayout != "auto" && o.cpuConvLayout != "blocked" &&
      o.cpuConvLayout != "plain")
    return fail("unknown --cpu-conv-layout '" + o.cpuConvLayout +
                "'; expected: auto, blocked, plain");
  if (o.profileOps && o.target != "cpu")
    return fail("--profile-ops times ops on the CPU target; for CUDA, "
                "remat-run --profile-kernels times each kernel");
  if (o.target == "cpu") {
    if (deviceStage)
      return fail("--emit=gpu, nvvm, ptx and cubin are for --target=cuda");
    return success();
  }
  if (o.gpuMappingOnHost)
    return fail("--test-gpu-mapping is for --target=cpu");
  auto chips = cudaChips();
  if (llvm::none_of(chips, [&](auto c) { return c.first == o.gpu.chip; })) {
    std::string known;
    for (auto c : chips)
      known += " " + c.first.str();
    return fail("unknown chip '" + o.gpu.chip + "'; expected one of:" + known);
  }
  return success();
}

namespace {
/// Runs stages on one module, each in its own pass manager under its own
/// timing scope.
class StageRunner {
public:
  StageRunner(ModuleOp module,
              function_ref<LogicalResult(PassManager &)> configure,
              TimingScope *timing)
      : module(module), configure(configure), timing(timing) {}

  LogicalResult run(StringRef name,
                    function_ref<LogicalResult(OpPassManager &)> build) {
    PassManager pm(module->getName());
    if (configure && failed(configure(pm)))
      return failure();
    TimingScope scope = timing ? timing->nest(name) : TimingScope();
    if (timing)
      pm.enableTiming(scope);
    if (failed(build(pm)))
      return module.emitError("internal error: cannot build the ")
             << name << " stage";
    return pm.run(module);
  }

  /// A scope for work outside the pass managers.
  TimingScope time(StringRef name) {
    return timing ? timing->nest(name) : TimingScope();
  }

private:
  ModuleOp module;
  function_ref<LogicalResult(PassManager &)> configure;
  TimingScope *timing;
};
} // namespace

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
    func->removeAttr(train::TrainDialect::kStepAttr);
  });
  // remat-outline-loop-nests's functions stay out of line, so that LLVM
  // optimizes each distinct nest once (func-to-llvm drops `no_inline`).
  module.walk([](LLVM::LLVMFuncOp func) {
    if (func->removeAttr("remat.outlined"))
      func.setNoInline(true);
  });
}

/// The bytes of the step's one device binary (PTX text or cubin).
/// The arena against the live peak, as a remark on the step.
static void remarkArena(func::FuncOp model, const ::remat::Manifest &m,
                        int64_t limit, int64_t solvedFor) {
  InFlightDiagnostic remark =
      model.emitRemark("arena: ")
      << m.arenaBytes << " bytes for buffers whose live peak is "
      << m.arenaLiveBytes << " bytes ("
      << llvm::formatv("{0:F4}", static_cast<double>(m.arenaBytes) /
                                     std::max<int64_t>(m.arenaLiveBytes, 1))
             .str()
      << "x); step peak " << m.predictedPeak << " bytes with the fixed "
      << m.fixedBytes;
  if (limit >= 0)
    remark << ", limit " << limit;
  if (solvedFor >= 0)
    remark << " (schedule solved for " << solvedFor
           << " to leave room for fragmentation)";
}

/// The arena remat-plan-arena laid out on the step, if any, and the step's
/// peak with it: the fixed region, the arena and the most bytes of other
/// allocations live at once. Returns the bytes by which that peak exceeds
/// the limit (0 when it fits or nothing was planned).
static int64_t recordArena(ModuleOp module, ::remat::Manifest &m,
                           int64_t limit) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto bytes = func->getAttrOfType<IntegerAttr>("remat.arena_bytes");
    auto live = func->getAttrOfType<IntegerAttr>("remat.arena_live_bytes");
    auto outside =
        func->getAttrOfType<IntegerAttr>("remat.arena_outside_bytes");
    auto offsets =
        func->getAttrOfType<DenseI64ArrayAttr>("remat.arena_offsets");
    if (!bytes || !live || !offsets || !outside)
      continue;
    m.arenaBytes = bytes.getInt();
    m.arenaLiveBytes = live.getInt();
    m.arenaOffsets.assign(offsets.asArrayRef().begin(),
                          offsets.asArrayRef().end());
    // Unknown other allocations (nested in loops) keep the live model's
    // prediction.
    if (outside.getInt() < 0)
      return 0;
    m.predictedPeak = m.fixedBytes + m.arenaBytes + outside.getInt();
    int64_t solvedFor = limit >= 0 ? m.memoryLimit : -1;
    if (limit < 0)
      limit = m.memoryLimit;
    if (limit >= 0 && m.predictedPeak > limit)
      return m.predictedPeak - limit;
    remarkArena(func, m, limit, solvedFor);
  }
  return 0;
}

static FailureOr<std::string> deviceCode(ModuleOp module) {
  SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
  if (binaries.size() != 1 || binaries.front().getObjects().size() != 1)
    return module.emitError("internal error: expected one device binary, "
                            "found ")
           << binaries.size();
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  return object.getObject().getValue().str();
}

/// Bufferized linalg to the LLVM dialect with embedded device code, or to
/// an earlier CUDA stage.
namespace {
/// compileStep's check of an arena build: the limit its peak must meet
/// (-1: the attempt's own) and the bytes by which an attempt exceeded it.
struct ArenaCheck {
  int64_t limit = -1, excess = 0;
};
} // namespace

static LogicalResult lowerForCUDA(StageRunner &stages, ModuleOp module,
                                  const CompileOptions &o, CompiledStep &step,
                                  ArenaCheck &arena) {
  CUDAOptions gpu = o.gpu;
  CompileStage stop = o.stopAfter;
  gpu.format = stop == CompileStage::PTX     ? "isa"
               : stop == CompileStage::Cubin ? "bin"
                                             : "fatbin";
  if (stop != CompileStage::GPU && stop != CompileStage::NVVM &&
      stop != CompileStage::PTX) {
    SmallVector<StringRef> tools = {"ptxas"};
    if (gpu.format == "fatbin")
      tools.push_back("fatbinary");
    std::string error;
    FailureOr<std::string> toolkit = findCUDAToolkit(o.cudaPath, tools, error);
    if (failed(toolkit))
      return module.emitError(error);
    gpu.toolkit = *toolkit;
  }
  if (failed(stages.run("bufferize", [&](OpPassManager &pm) {
        return buildBufferizationStage(pm, o.arena);
      })))
    return failure();
  if ((arena.excess = recordArena(module, step.manifest, arena.limit)))
    return failure();
  if (failed(stages.run("map to GPU", [&](OpPassManager &pm) {
        return buildGPUMappingStage(pm, gpu);
      })))
    return failure();
  for (auto m : module.getOps<gpu::GPUModuleOp>())
    step.manifest.kernels += llvm::range_size(m.getOps<gpu::GPUFuncOp>());
  if (stop == CompileStage::GPU)
    return success();
  if (failed(stages.run("kernels to NVVM", [&](OpPassManager &pm) {
        return buildCUDAToNVVMStage(pm, gpu);
      })))
    return failure();
  if (stop == CompileStage::NVVM)
    return success();
  if (failed(stages.run("device binary", [&](OpPassManager &pm) {
        return buildCUDABinaryStage(pm, gpu);
      })))
    return failure();
  step.manifest.deviceCode = gpu.format;
  if (stop == CompileStage::PTX || stop == CompileStage::Cubin) {
    FailureOr<std::string> code = deviceCode(module);
    if (failed(code))
      return failure();
    step.bytes = std::move(*code);
  }
  return success();
}

static LogicalResult lowerForCPU(StageRunner &stages, ModuleOp module,
                                 const CompileOptions &o, CompiledStep &step,
                                 ArenaCheck &arena) {
  bool convKernels = o.cpuConvKernels && !o.gpuMappingOnHost;
  if (failed(stages.run("bufferize", [&](OpPassManager &pm) {
        return buildBufferizationStage(pm, o.arena, convKernels);
      })))
    return failure();
  if ((arena.excess = recordArena(module, step.manifest, arena.limit)))
    return failure();
  return stages.run("lower to LLVM", [&](OpPassManager &pm) {
    if (o.gpuMappingOnHost) {
      if (failed(buildGPUMappingStage(pm, o.gpu, /*outline=*/false)))
        return failure();
      o.gpuMappingOnHost(pm);
    }
    return buildCPUToLLVMStage(pm, convKernels);
  });
}

/// The LLVM dialect to optimized LLVM IR or an object file, with the entry
/// points the driver calls.
static LogicalResult generateHostCode(StageRunner &stages, ModuleOp module,
                                      const CompileOptions &o,
                                      CompiledStep &step) {
  prepareForTranslation(module);
  std::string error;
  auto fail = [&]() { return module.emitError(error); };
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    TimingScope scope = stages.time("translate to LLVM IR");
    llvmModule =
        translateModuleToLLVMIR(module, llvmContext, step.manifest.function);
  }
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine(error);
  if (!machine)
    return fail();
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (failed(addEntryPoints(*llvmModule, step.manifest.function,
                            step.manifest.signature, o.target, error)))
    return fail();
  {
    TimingScope scope = stages.time("LLVM optimization");
    if (failed(optimizeModule(*llvmModule, *machine, o.optLevel, error)))
      return fail();
  }
  if (o.stopAfter == CompileStage::LLVMIR) {
    llvm::raw_string_ostream os(step.bytes);
    llvmModule->print(os, nullptr);
    return success();
  }
  TimingScope scope = stages.time("LLVM code generation");
  if (failed(emitObject(*llvmModule, *machine, step.bytes, error)))
    return fail();
  return success();
}

/// The profiling build's table of timed ops, for remat-run --profile.
static void recordProfileOps(ModuleOp module, ::remat::Manifest &m) {
  auto table = module->getAttrOfType<ArrayAttr>("remat.profile_ops");
  for (auto entry : table.getAsRange<DictionaryAttr>()) {
    auto get = [&](StringRef key) {
      return cast<StringAttr>(entry.get(key)).getValue().str();
    };
    m.profileOps.push_back({get("op"), get("loc"), get("types")});
  }
}

/// One compilation into `step`; with an arena over the limit, fails
/// without a diagnostic and sets `arena.excess`.
static FailureOr<CompiledStep>
compileOnce(ModuleOp module, const CompileOptions &o,
            function_ref<LogicalResult(PassManager &)> configure,
            TimingScope *timing, CompiledStep &step, ArenaCheck &arena) {
  std::string error;
  if (failed(verifyCompileOptions(o, error)))
    return module.emitError(error);
  FailureOr<func::FuncOp> model = mlir::remat::detail::findModel(module);
  if (failed(model))
    return failure();
  StageRunner stages(module, configure, timing);
  ::remat::Manifest &m = step.manifest;
  m.target = o.target;
  if (failed(stages.run("autodiff", [&](OpPassManager &pm) {
        pm.addNestedPass<func::FuncOp>(train::createTrainAutodiff(o.autodiff));
        return success();
      })))
    return failure();
  // The convolutions' library workspace enters the memory model before
  // anything measures the step.
  if (o.target == "cpu" && o.cpuConvKernels && o.cpuConvLibrary &&
      !o.gpuMappingOnHost &&
      failed(stages.run("convolution library", [&](OpPassManager &pm) {
        RematConvLibraryOptions library;
        library.layout = o.cpuConvLayout;
        pm.addNestedPass<func::FuncOp>(createRematConvLibrary(library));
        return success();
      })))
    return failure();
  model->walk([&](Operation *op) {
    if (op->hasAttr(train::kConvLayoutAttr))
      m.convLayout = o.cpuConvLayout;
  });
  StringRef costTarget = o.target == "cuda" ? StringRef(o.gpu.chip) : "cpu";
  FailureOr<CostModel> cost = CostModel::get(o.costModel, o.targetDesc,
                                             costTarget, o.costProfile, error);
  if (failed(cost))
    return module.emitError(error);
  bool timed = cost->getKind() != CostModel::Kind::Flops;
  FailureOr<MemoryReport> before = analyzeMemory(*model);
  if (failed(before))
    return failure();
  m.baselineCost = before->cost;
  if (timed) {
    FailureOr<MemoryReport> priced = analyzeMemory(*model, *cost);
    if (failed(priced))
      return failure();
    m.baselineMs = priced->cost * 1e-6;
  }
  m.solver = "none";
  if (o.remat) {
    train::TrainRematOptions remat = *o.remat;
    remat.costModel = o.costModel;
    remat.targetDesc = o.targetDesc;
    remat.costProfile = o.costProfile;
    remat.target = costTarget.str();
    if (failed(stages.run("remat", [&](OpPassManager &pm) {
          pm.addNestedPass<func::FuncOp>(train::createTrainRemat(remat));
          return success();
        })))
      return failure();
    FailureOr<int64_t> limit =
        parseMemoryLimit(o.remat->memoryLimit, before->peakBytes, error);
    if (failed(limit))
      return module.emitError(error);
    m.memoryLimit = *limit;
    m.solver = o.remat->solver;
    m.searchSeconds = o.remat->searchSeconds;
  }
  FailureOr<MemoryReport> after = analyzeMemory(*model);
  if (failed(after) || failed(mlir::remat::detail::describeStep(
                           *model, o.autodiff.learningRate, m)))
    return failure();
  m.predictedPeak = after->peakBytes;
  m.predictedCost = after->cost;
  m.costModel = cost->name().str();
  if (timed) {
    FailureOr<MemoryReport> priced = analyzeMemory(*model, *cost);
    if (failed(priced))
      return failure();
    m.predictedMs = priced->cost * 1e-6;
  }
  m.fixedBytes = after->fixedBytes;
  m.paramBytes = after->paramBytes;
  m.dataBytes = after->dataBytes;
  m.stateBytes = after->stateBytes;
  if (o.target == "cuda")
    m.chip = o.gpu.chip;
  if (o.stopAfter == CompileStage::Step)
    return step;
  if (o.stopAfter == CompileStage::Graph) {
    FailureOr<StepGraph> graph = buildStepGraph(*model, *cost);
    if (failed(graph))
      return failure();
    step.bytes = ::remat::writeGraph(graph->graph, m.function) + "\n";
    return step;
  }

  if (o.profileOps) {
    if (failed(stages.run("profile ops", [&](OpPassManager &pm) {
          pm.addPass(train::createTrainProfileOps());
          return success();
        })))
      return failure();
    recordProfileOps(module, m);
  }
  if (failed(stages.run("train to linalg", buildTrainToLinalgStage)))
    return failure();
  if (o.stopAfter == CompileStage::Linalg)
    return step;
  (*model)->setAttr("llvm.emit_c_interface",
                    UnitAttr::get(module.getContext()));
  if (o.target == "cuda") {
    if (failed(lowerForCUDA(stages, module, o, step, arena)))
      return failure();
    if (o.stopAfter <= CompileStage::Cubin)
      return step;
  } else if (failed(lowerForCPU(stages, module, o, step, arena))) {
    return failure();
  }
  if (o.stopAfter == CompileStage::LLVMDialect)
    return step;
  if (failed(generateHostCode(stages, module, o, step)))
    return failure();
  return step;
}

/// compileStep without the fallback from oneDNN's convolutions.
static FailureOr<CompiledStep>
compileWithArena(ModuleOp module, const CompileOptions &o,
                 function_ref<LogicalResult(PassManager &)> configure,
                 TimingScope *timing);

FailureOr<CompiledStep>
mlir::remat::compileStep(ModuleOp module, const CompileOptions &o,
                         function_ref<LogicalResult(PassManager &)> configure,
                         TimingScope *timing) {
  bool library = o.target == "cpu" && o.cpuConvKernels && o.cpuConvLibrary &&
                 !o.gpuMappingOnHost && o.remat;
  if (!library)
    return compileWithArena(module, o, configure, timing);
  // Under a limit, oneDNN's convolution workspace may leave no schedule
  // that fits: then the runtime's kernels (no workspace) run them. The
  // first attempt's diagnostics are held until it is known to stand.
  OwningOpRef<ModuleOp> original = module.clone();
  MLIRContext *context = module.getContext();
  std::vector<Diagnostic> held;
  FailureOr<CompiledStep> result = failure();
  {
    ScopedDiagnosticHandler hold(context, [&](Diagnostic &d) {
      held.push_back(std::move(d));
      return success();
    });
    result = compileWithArena(module, o, configure, timing);
  }
  bool used = false;
  original->walk([&](Operation *op) {
    used |= isa<train::Conv2DOp, train::Conv2DGradInputOp,
                train::Conv2DGradWeightOp>(op);
  });
  if (succeeded(result) || !used) {
    for (Diagnostic &d : held)
      context->getDiagEngine().emit(std::move(d));
    return result;
  }
  Location loc = module.getLoc();
  for (auto func : original->getOps<func::FuncOp>())
    if (!func.isExternal())
      loc = func.getLoc();
  module.getBodyRegion().takeBody(original->getBodyRegion());
  CompileOptions kernels = o;
  kernels.cpuConvLibrary = false;
  result = compileWithArena(module, kernels, configure, timing);
  if (succeeded(result))
    emitRemark(loc, "convolutions run in the runtime's kernels: with "
                    "oneDNN's workspace no schedule meets the limit");
  return result;
}

static FailureOr<CompiledStep>
compileWithArena(ModuleOp module, const CompileOptions &o,
                 function_ref<LogicalResult(PassManager &)> configure,
                 TimingScope *timing) {
  OwningOpRef<ModuleOp> original;
  FailureOr<func::FuncOp> model = failure();
  if (o.arena && o.remat) {
    original = module.clone();
    // Quietly: compileOnce reports a module without a model.
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    model = mlir::remat::detail::findModel(*original);
  }
  CompileOptions attempt = o;
  int64_t limit = -1;
  ::remat::Manifest last;
  // The arena's fragmentation over the limit: solve again for that much
  // less, a few times, then refuse with the figures.
  for (int tries = 0;; ++tries) {
    CompiledStep step;
    ArenaCheck arena{limit};
    // A retry's own errors (the solver refusing the smaller limit) give way
    // to the arena's figures below.
    std::optional<ScopedDiagnosticHandler> quiet;
    if (tries)
      quiet.emplace(module.getContext(), [](Diagnostic &d) {
        return success(d.getSeverity() == DiagnosticSeverity::Error);
      });
    FailureOr<CompiledStep> result =
        compileOnce(module, attempt, configure, timing, step, arena);
    quiet.reset();
    if (limit < 0)
      limit = step.manifest.memoryLimit;
    if (succeeded(result)) {
      if (result->manifest.arenaBytes)
        result->manifest.memoryLimit = limit;
      return result;
    }
    if (!arena.excess && !tries)
      return failure();
    if (arena.excess)
      last = step.manifest;
    // Room for the fragmentation seen, more each try, and below the live
    // peak just reached (a solver may meet a smaller limit with the same
    // schedule).
    int64_t frag = last.arenaBytes - last.arenaLiveBytes;
    int64_t next =
        std::min(limit - frag * (tries + 1), last.predictedPeak - frag - 1);
    if (!arena.excess || tries == 4 || next <= last.fixedBytes)
      return emitError(succeeded(model) ? model->getLoc() : module.getLoc(),
                       "the arena plan needs ")
             << last.predictedPeak << " bytes (fixed " << last.fixedBytes
             << ", arena " << last.arenaBytes
             << " for buffers whose live peak is " << last.arenaLiveBytes
             << ", returned buffers "
             << last.predictedPeak - last.fixedBytes - last.arenaBytes
             << " beside it for the whole step), over the limit " << limit
             << " by " << last.predictedPeak - limit
             << "; no schedule leaves room for the arena";
    attempt.remat->memoryLimit = std::to_string(next);
    OwningOpRef<ModuleOp> fresh = original->clone();
    module.getBodyRegion().takeBody(fresh->getBodyRegion());
  }
}
