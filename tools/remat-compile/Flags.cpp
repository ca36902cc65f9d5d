//===- Flags.cpp - remat-compile's command-line options -------------------===//
//
// Every flag of remat-compile and how it sets CompileOptions.
//
//===----------------------------------------------------------------------===//

#include "Flags.h"

#include "TestPasses.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::tools;
namespace cl = llvm::cl;

cl::OptionCategory tools::category("remat-compile options");
template <typename T, typename... Mods>
static cl::opt<T> flag(StringRef name, StringRef desc, Mods &&...mods) {
  return cl::opt<T>(name, cl::desc(desc), cl::cat(category), mods...);
}

cl::opt<std::string> tools::inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(category));
cl::opt<std::string> tools::outputFile("o", cl::desc("Output file"),
                                       cl::init(""), cl::value_desc("file"),
                                       cl::cat(category));
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
static auto cpuConvLibrary = flag<bool>(
    "cpu-conv-library",
    "CPU: f32 convolutions through oneDNN (else the runtime's own kernels)",
    cl::init(false));
static auto cpuConvLayout = flag<std::string>(
    "cpu-conv-layout",
    "CPU: oneDNN's operand layouts: blocked (fastest; copies of the "
    "operands in each convolution's workspace), plain (the step's buffers; "
    "oneDNN's scratch only; depthwise through the runtime's kernels) or auto "
    "(per convolution, plain or else blocked where the workspace does not "
    "raise the step's floor, else the runtime's kernels)",
    cl::init("auto"));
static auto costModel = flag<std::string>(
    "cost-model",
    "Price of recomputing an op: flops (default), roofline (time on the "
    "target: compute or memory bound, plus a per-op overhead) or profile "
    "(measured times, see --cost-profile)",
    cl::init("flops"));
static auto costProfile = flag<std::string>(
    "cost-profile", "Price ops by their times in this profile (remat-run "
                    "--profile's output), by the roofline where it has none");
static auto profileOps = flag<bool>(
    "profile-ops", "CPU: time each op of the step, for remat-run --profile");
static auto targetDesc = flag<std::string>(
    "target-desc", "roofline: the target's rates as JSON (default: built in "
                   "for cpu, sm_80, sm_90; bench/calibrate.py writes one)");
static auto memoryPlan = flag<std::string>(
    "memory-plan",
    "Intermediate buffers: arena (compile-time offsets in one allocation "
    "per step) or malloc (one allocation each, freed at last use)",
    cl::init("arena"));
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
    flag<double>("learning-rate", "Learning rate", cl::init(0.01));
static auto optimizer = flag<std::string>(
    "optimizer",
    "sgd, adam or adamw, with hyperparameters after ':' "
    "(adamw:weight-decay=0.05,beta2=0.95; sgd:momentum=0.9,nesterov)",
    cl::init("sgd"));
static auto mode = flag<std::string>(
    "mode",
    "step (default), backward (loss and gradients, no update) or apply (the "
    "update from gradient arguments): a step split for data parallelism",
    cl::init("step"));
static auto runtimeLR = flag<bool>(
    "runtime-lr", "The learning rate as a step argument (for schedules)");
static cl::opt<unsigned>
    optLevel("O", cl::desc("LLVM optimization level, 0 to 3 (default 3)"),
             cl::value_desc("level"), cl::Prefix, cl::init(3),
             cl::cat(category));
static auto returnGradients =
    flag<bool>("return-gradients",
               "Return parameter gradients (for remat-run --grad-check)");
cl::opt<CompileStage> tools::emit("emit", cl::desc("What to write"),
                                  cl::init(CompileStage::Shared),
                                  cl::cat(category));

LogicalResult tools::optionsFromFlags(CompileOptions &o, std::string &error) {
  o.target = target;
  o.autodiff.learningRate = learningRate;
  o.autodiff.returnGradients = returnGradients;
  o.autodiff.runtimeLearningRate = runtimeLR;
  o.autodiff.mode = mode;
  if (failed(parseOptimizer(optimizer, o.autodiff, error)))
    return failure();
  if (!memoryLimit.empty())
    o.remat =
        train::TrainRematOptions{memoryLimit, solver, timeLimit, searchSeconds};
  o.gpu.chip = chip;
  o.gpu.mapping.tileContractions = tileContractions;
  o.gpu.mapping.blockReductions = blockReductions;
  o.gpu.mapping.registerTile = registerTile;
  o.cudaPath = cudaPath;
  o.cpuConvKernels = cpuConvKernels;
  o.cpuConvLibrary = cpuConvLibrary;
  o.cpuConvLayout = cpuConvLayout;
  if (memoryPlan != "malloc" && memoryPlan != "arena") {
    error = "--memory-plan must be 'malloc' or 'arena', got '" +
            memoryPlan.getValue() + "'";
    return failure();
  }
  o.arena = memoryPlan == "arena";
  o.costModel = costModel;
  o.targetDesc = targetDesc;
  o.costProfile = costProfile;
  o.profileOps = profileOps;
  if (testGPUMapping)
    o.gpuMappingOnHost = test::addTestGPUToLoopsPass;
  o.optLevel = optLevel;
  o.stopAfter = emit;
  if (chip.getNumOccurrences() && target == "cpu") {
    error = "--chip is for --target=cuda";
    return failure();
  }
  return verifyCompileOptions(o, error);
}
