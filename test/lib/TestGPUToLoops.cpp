//===- TestGPUToLoops.cpp - GPU kernels as host loops, for tests ---------===//
//
// remat-test-gpu-to-loops replaces each gpu.launch built by
// remat-map-to-gpu with loops over its blocks and threads, and gpu.alloc /
// gpu.dealloc with their memref forms, so that the CPU pipeline can run the
// GPU mapping and tests can compare it with the CPU build without a GPU.
// Within a block, each stretch between barriers runs for every thread
// before the next (what a barrier guarantees); per-thread values used
// across a barrier go through a stack slot per thread, and a loop
// containing barriers (same bounds in every thread) runs on the host with
// its iteration values in slots. Workgroup memory is a stack buffer.
// Barriers elsewhere (under scf.if), a block size that is not constant in a
// kernel with barriers, private memory, and memrefs live across a barrier
// are errors. Registered only in remat-opt; remat-compile adds it for
// --test-gpu-mapping.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "GPUKernels.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

namespace {
/// Stack buffers at the step's entry that kernels, which run one after
/// another, reuse: per-thread slots and workgroup memory.
class BufferPool {
public:
  explicit BufferPool(func::FuncOp func)
      : entry(OpBuilder::atBlockBegin(&func.getBody().front())) {}

  /// The `index`th buffer of `type` of the current kernel.
  Value get(MemRefType type, unsigned index) {
    SmallVector<Value> &buffers = pool[type];
    while (buffers.size() <= index)
      buffers.push_back(
          memref::AllocaOp::create(entry, entry.getUnknownLoc(), type));
    return buffers[index];
  }

private:
  OpBuilder entry;
  DenseMap<Type, SmallVector<Value>> pool;
};

/// Runs one gpu.launch as host loops: blocks in turn, and within a block,
/// each stretch of the kernel between barriers for every thread in turn
/// (which is what a barrier guarantees). Per-thread values that live
/// across a barrier go through one slot per thread; loops containing
/// barriers run on the host, their iteration values in slots too.
/// Workgroup memory is one host buffer that every block reuses.
class KernelEmulator {
public:
  KernelEmulator(gpu::LaunchOp launch, BufferPool &pool)
      : launch(launch), pool(pool) {}

  LogicalResult run() {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    if (hasBarrier(launch)) {
      std::optional<int64_t> n = getConstantIntValue(launch.getBlockSizeX());
      if (!n)
        return launch.emitError(
            "expects a constant block size in a kernel with barriers");
      numThreads = *n;
    }
    if (!launch.getPrivateAttributions().empty())
      return launch.emitError("expects no private memory");
    for (BlockArgument attribution : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(attribution.getType());
      uniform.map(attribution,
                  buffer(MemRefType::get(type.getShape(), type.getElementType(),
                                         type.getLayout())));
    }
    zero = indexConst(b, loc, 0);
    oneIdx = indexConst(b, loc, 1);
    auto blocks =
        scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), oneIdx);
    uniform.map(launch.getBlockIds().x, blocks.getInductionVar());
    uniform.map(launch.getBlockSize().x, launch.getBlockSizeX());
    uniform.map(launch.getGridSize().x, launch.getGridSizeX());
    for (Value v : {launch.getBlockIds().y, launch.getBlockIds().z,
                    launch.getThreadIds().y, launch.getThreadIds().z})
      uniform.map(v, zero);
    for (Value v : {launch.getBlockSize().y, launch.getBlockSize().z,
                    launch.getGridSize().y, launch.getGridSize().z})
      uniform.map(v, oneIdx);
    builder.setInsertionPoint(blocks.getBody()->getTerminator());
    if (failed(emitBlock(launch.getBody().front())))
      return failure();
    launch.erase();
    return success();
  }

private:
  static bool hasBarrier(Operation *op) {
    return op->walk([](gpu::BarrierOp) { return WalkResult::interrupt(); })
        .wasInterrupted();
  }

  /// Whether `op` computes the same in every thread of a block (a constant,
  /// index arithmetic on the block id): it runs once on the host.
  bool isUniform(Operation &op) {
    if (!isPure(&op) || op.getNumRegions() != 0)
      return false;
    return llvm::all_of(op.getOperands(), [&](Value v) {
      return uniform.contains(v) ||
             !launch.getBody().isAncestor(v.getParentRegion());
    });
  }

  /// The ops of `block` but its terminator: stretches without barriers run
  /// per thread, loops with barriers on the host.
  LogicalResult emitBlock(Block &block) {
    SmallVector<Operation *> stretch;
    for (Operation &op : block.without_terminator()) {
      if (isUniform(op)) {
        builder.clone(op, uniform);
        continue;
      }
      if (!hasBarrier(&op)) {
        stretch.push_back(&op);
        continue;
      }
      if (failed(emitStretch(block, stretch)))
        return failure();
      stretch.clear();
      if (isa<gpu::BarrierOp>(op))
        continue;
      auto loop = dyn_cast<scf::ForOp>(op);
      if (!loop)
        return op.emitError("expects barriers only at the top level of the "
                            "kernel or of loops");
      if (failed(emitLoop(loop)))
        return failure();
    }
    return emitStretch(block, stretch);
  }

  /// A loop over the threads, mapping their id, with `body` inside; the
  /// per-thread values `body` uses from slots are loaded first.
  template <typename Fn>
  LogicalResult forEachThread(ArrayRef<Value> used, Fn body) {
    Location loc = launch.getLoc();
    auto threads =
        scf::ForOp::create(builder, loc, zero, launch.getBlockSizeX(), oneIdx);
    OpBuilder tb(threads.getBody()->getTerminator());
    IRMapping map = uniform;
    map.map(launch.getThreadIds().x, threads.getInductionVar());
    for (Value v : used) {
      auto it = slots.find(v);
      if (it != slots.end() && !map.contains(v))
        map.map(v, memref::LoadOp::create(tb, loc, it->second,
                                          threads.getInductionVar()));
    }
    return body(tb, map, threads.getInductionVar());
  }

  /// Every value `ops` (and their regions) use.
  static SmallVector<Value> usedBy(ArrayRef<Operation *> ops) {
    llvm::SetVector<Value> used;
    for (Operation *op : ops)
      op->walk(
          [&](Operation *inner) { used.insert_range(inner->getOperands()); });
    return used.takeVector();
  }

  /// A slot per thread for values of `type`.
  FailureOr<Value> newSlot(Location loc, Type type) {
    if (!MemRefType::isValidElementType(type) || isa<MemRefType>(type))
      return emitError(loc, "cannot keep a value of type ")
             << type << " across a barrier";
    return buffer(MemRefType::get({numThreads}, type));
  }

  /// A buffer of `type` no other buffer of this kernel uses.
  Value buffer(MemRefType type) { return pool.get(type, taken[type]++); }

  LogicalResult emitStretch(Block &block, ArrayRef<Operation *> ops) {
    if (ops.empty())
      return success();
    llvm::SmallPtrSet<Operation *, 16> inStretch(ops.begin(), ops.end());
    return forEachThread(
        usedBy(ops),
        [&](OpBuilder &tb, IRMapping &map, Value tid) -> LogicalResult {
          for (Operation *op : ops)
            tb.clone(*op, map);
          // Values used after the next barrier go to slots.
          for (Operation *op : ops)
            for (Value v : op->getResults()) {
              bool escapes = llvm::any_of(v.getUsers(), [&](Operation *user) {
                Operation *at = block.findAncestorOpInBlock(*user);
                return !at || !inStretch.contains(at);
              });
              if (!escapes)
                continue;
              FailureOr<Value> slot = newSlot(op->getLoc(), v.getType());
              if (failed(slot))
                return failure();
              slots[v] = *slot;
              memref::StoreOp::create(tb, op->getLoc(), map.lookup(v), *slot,
                                      tid);
            }
          return success();
        });
  }

  /// A loop with barriers: the same bounds for every thread, so it runs on
  /// the host; its iteration values live in slots.
  LogicalResult emitLoop(scf::ForOp loop) {
    Location loc = loop.getLoc();
    SmallVector<Value> bounds = {loop.getLowerBound(), loop.getUpperBound(),
                                 loop.getStep()};
    for (Value &v : bounds) {
      if (slots.contains(v) || v == launch.getThreadIds().x)
        return loop.emitError("expects a loop with barriers to have the same "
                              "bounds in every thread");
      v = uniform.lookupOrDefault(v);
    }
    SmallVector<Value> iterSlots;
    for (Value init : loop.getInitArgs()) {
      FailureOr<Value> slot = newSlot(loc, init.getType());
      if (failed(slot))
        return failure();
      iterSlots.push_back(*slot);
    }
    auto store = [&](ValueRange values) {
      return forEachThread(
          SmallVector<Value>(values),
          [&](OpBuilder &tb, IRMapping &map, Value tid) -> LogicalResult {
            SmallVector<Value> mapped;
            for (Value v : values)
              mapped.push_back(map.lookupOrDefault(v));
            for (auto [v, slot] : llvm::zip(mapped, iterSlots))
              memref::StoreOp::create(tb, loc, v, slot, tid);
            return success();
          });
    };
    if (!iterSlots.empty() && failed(store(loop.getInitArgs())))
      return failure();
    auto host =
        scf::ForOp::create(builder, loc, bounds[0], bounds[1], bounds[2]);
    uniform.map(loop.getInductionVar(), host.getInductionVar());
    for (auto [arg, slot] : llvm::zip(loop.getRegionIterArgs(), iterSlots))
      slots[arg] = slot;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(host.getBody()->getTerminator());
    if (failed(emitBlock(*loop.getBody())))
      return failure();
    if (!iterSlots.empty() &&
        failed(store(loop.getBody()->getTerminator()->getOperands())))
      return failure();
    for (auto [result, slot] : llvm::zip(loop.getResults(), iterSlots))
      slots[result] = slot;
    return success();
  }

  gpu::LaunchOp launch;
  BufferPool &pool;
  DenseMap<Type, unsigned> taken;         // buffers this kernel uses
  OpBuilder builder{launch.getContext()}; // where host loops go
  IRMapping uniform;                      // values one per block
  DenseMap<Value, Value> slots;           // per-thread values in memory
  int64_t numThreads = 0;
  Value zero, oneIdx;
};

/// Runs kernels as loops on the host (see KernelEmulator), and device
/// allocations as host ones, so the CPU can check the mapping.
struct TestGPUToLoopsPass
    : public PassWrapper<TestGPUToLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestGPUToLoopsPass)

  StringRef getArgument() const final { return "remat-test-gpu-to-loops"; }
  StringRef getDescription() const final {
    return "Runs remat-map-to-gpu's kernels as host loops (for tests)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<scf::SCFDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp l) { launches.push_back(l); });
    if (getOperation().isExternal())
      return;
    BufferPool pool(getOperation());
    for (gpu::LaunchOp launch : launches) {
      if (!launch.getBody().hasOneBlock()) {
        launch.emitError("expects a kernel of one block");
        return signalPassFailure();
      }
      if (failed(KernelEmulator(launch, pool).run()))
        return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<gpu::AllocOp, gpu::DeallocOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        auto host = memref::AllocOp::create(b, alloc.getLoc(), alloc.getType(),
                                            alloc.getDynamicSizes(),
                                            alloc.getSymbolOperands());
        alloc.getMemref().replaceAllUsesWith(host);
      } else {
        memref::DeallocOp::create(b, op->getLoc(),
                                  cast<gpu::DeallocOp>(op).getMemref());
      }
      op->erase();
    }
  }
};
} // namespace

std::unique_ptr<Pass> mlir::remat::test::createTestGPUToLoopsPass() {
  return std::make_unique<TestGPUToLoopsPass>();
}

void mlir::remat::test::addTestGPUToLoopsPass(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createTestGPUToLoopsPass());
}

void mlir::remat::test::registerTestPasses() {
  PassRegistration<TestGPUToLoopsPass>();
}
