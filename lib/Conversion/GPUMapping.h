//===- GPUMapping.h - remat-map-to-gpu by kernel kind ----------*- C++ -*-===//
//
// The GPU mapping is one KernelMapper per function, its methods defined
// by kernel kind: thread-per-element kernels (GPUElementwise.cpp), tiled
// contractions (GPUContraction.cpp), block reductions (GPUReduction.cpp),
// serial kernels and the host body (GPUSerial.cpp), device memory
// (GPUDeviceMemory.cpp); all build kernels with GPUKernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_CONVERSION_GPUMAPPING_H
#define REMAT_LIB_CONVERSION_GPUMAPPING_H

#include "GPUKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::remat::detail {

class KernelMapper {
public:
  explicit KernelMapper(const RematMapToGPUOptions &options)
      : options(options) {}

  // The pass runs these in order on a step function (foldConstantGlobals
  // between the first two).

  /// Every top-level linalg op: a kernel, or else parallel loops (for
  /// mapBody). Consecutive ops that fusible accepts share one kernel (a
  /// zero fill and the matmul or reduction accumulating into it, a bias and
  /// the activation after it). Only allocations and constants may sit
  /// between them (they move above the kernel); a free ends a group, so
  /// the schedule's order of allocations and frees, and its peak, stay.
  LogicalResult mapLinalgOps(func::FuncOp func);

  /// The loop nests left in the body: parallel and marked nests become
  /// kernels (thread per iteration, or block reductions); every other run
  /// of device work between host ops becomes a one-thread kernel.
  LogicalResult mapBody(func::FuncOp func);

  /// memref.alloc and memref.dealloc at the step's top level as
  /// gpu.alloc and gpu.dealloc, in place; elsewhere an error.
  LogicalResult moveAllocationsToDevice(func::FuncOp func);

private:
  //===--------------------------------------------------------------------===//
  // Thread-per-element kernels
  //===--------------------------------------------------------------------===//

  /// The parallel dimensions of a linalg op this pass gives one thread per
  /// output element: pure buffer semantics, static positive ranges, and
  /// outputs indexed by parallel dimensions only (every named op, and the
  /// lowering's generics); false when the op is not one. (An op without
  /// parallel dimensions, a full reduction, is one thread.)
  static bool threadDims(linalg::LinalgOp op,
                         SmallVectorImpl<unsigned> &parallel);

  /// Whether `map` indexes exactly by `parallel`, in order: the element the
  /// thread of those indices owns.
  static bool isThreadIndexed(AffineMap map, ArrayRef<unsigned> parallel);

  /// What a thread of a fused kernel stored to an element it owns.
  struct Owned {
    Value value;           // what this thread stored to its element
    memref::StoreOp store; // the store
  };

  /// Emits, in the kernel of thread indices `pivs`, what one thread of `op`
  /// does: the reduction dimensions as loops with the accumulators in
  /// registers, each output element read and written once, in the same
  /// order as convert-linalg-to-loops (so the same bits). `owned` holds
  /// the values this thread already stored to elements it owns (earlier ops
  /// of a fused group): reading them again needs no load, and storing over
  /// them makes the earlier store dead; it is updated with what `op`
  /// stores. `markReductions` marks the reduction loops for mapRowBlocks.
  void emitThread(OpBuilder &kb, linalg::LinalgOp op, ValueRange pivs,
                  DenseMap<Value, Owned> &owned, bool markReductions = false);

  /// One kernel for `group`, linalg ops that threadDims accepts with the
  /// same thread space, at the first op: each thread runs every op's work
  /// for its indices in order (see fusible).
  void mapGroup(ArrayRef<linalg::LinalgOp> group);

  /// The extents of an op's thread space, in its order.
  static SmallVector<int64_t> threadExtents(linalg::LinalgOp op);

  /// Whether `op` may join `group` in one kernel: the same thread space,
  /// every buffer a member writes accessed by every member only at the
  /// element of the accessing thread (so no thread reads what another
  /// writes), and every buffer a fresh allocation or an argument (no views
  /// that could alias). Then running the ops one after another per thread
  /// is running them one after another.
  static bool fusible(ArrayRef<linalg::LinalgOp> group, linalg::LinalgOp op);

  /// A parallel loop nest with static bounds and no reductions, from
  /// convert-linalg-to-parallel-loops: one thread per iteration.
  bool mapParallel(scf::ParallelOp loop);

  /// An scf.for nest the lowering marked parallel: the marked loops that are
  /// perfectly nested (besides constants) become the kernel's threads.
  bool mapParallelFor(scf::ForOp outer);

  /// The kernel for `inner` (one thread per iteration) whose threads each
  /// run the loops of `fors` (outermost first) around inner's body; `root`,
  /// the outermost op, is replaced.
  bool mapNestAroundParallel(ArrayRef<scf::ForOp> fors, scf::ParallelOp inner,
                             Operation *root);

  //===--------------------------------------------------------------------===//
  // Tiled contractions
  //===--------------------------------------------------------------------===//

  /// The loop dimensions of a contraction that gets a shared-memory tiled
  /// kernel: one m, one n, one k and at most one batch dimension, operands
  /// indexed by dimensions only (any transpose), a payload without indices.
  struct Contraction {
    std::optional<unsigned> batch;
    unsigned m, n, k;
    SmallVector<int64_t> ranges;
  };

  /// The reduction length below which a contraction keeps the one-thread-
  /// per-element kernel: a tile of k would be mostly empty.
  static constexpr int64_t kTileK = 16;

  /// `op` as a contraction that gets a tiled kernel; none where it is not
  /// one or its k is shorter than kTileK.
  static std::optional<Contraction> tileable(linalg::LinalgOp op);

  /// The indices `map` (of loop dimensions only) gives for `ivs`.
  static SmallVector<Value> dimIndices(AffineMap map, ArrayRef<Value> ivs);

  /// `then` under `cond`, or else zero, when `cond` is set; `then` alone
  /// otherwise.
  static Value guarded(OpBuilder &b, Location loc, Value cond, Type type,
                       function_ref<Value(OpBuilder &)> then);

  /// One kernel for a group whose member `at` is a contraction `c`, after
  /// only fills of its output and before ops that fusible accepted. A block
  /// of side x side threads computes a tile of side rm x side rn outputs of
  /// one batch, rm x rn per thread in registers (rows ty + side i, columns
  /// tx + side j, so a warp reads a row of the B tile at consecutive
  /// addresses and A elements by broadcast): 16 x 16 threads with up to
  /// 4 x 4 outputs each, or, where m and n are both at least 64 and
  /// register-tile is 8 (not the default: not yet timed on a GPU), 8 x 8
  /// threads with 8 x 8 outputs each (the same 64 x 64 tile and grid, but
  /// 4 multiply-adds per shared-memory load instead of 2). For each step of
  /// kTileK along k, the block copies the A and B tiles to shared memory (each
  /// thread loads neighbouring elements along the operand's innermost
  /// dimension, so loads coalesce whatever the transpose; rows padded by
  /// one to spread the stores over banks), waits, and accumulates. Every
  /// output still sums k in order from its initial value: the same bits as
  /// the one-thread-per-element kernel. The fill becomes the accumulators'
  /// initial value; the ops after it run per output, on the value in the
  /// register.
  void mapTiledGroup(ArrayRef<linalg::LinalgOp> group, size_t at,
                     const Contraction &c);

  /// The member of `group` mapTiledGroup takes, if any.
  std::optional<std::pair<size_t, Contraction>>
  tiledMember(ArrayRef<linalg::LinalgOp> group);

  //===--------------------------------------------------------------------===//
  // Block reductions
  //===--------------------------------------------------------------------===//

  /// An scf.for nest around one scf.parallel, as convert-linalg-to-parallel-
  /// loops emits for reductions over outer dimensions (a bias gradient):
  /// linalg's parallel dimensions index distinct outputs, so each thread
  /// runs the whole reduction for its own elements, in the original order.
  bool mapReductionNest(scf::ForOp outer);

  /// The row nest `nest` (marked parallel, over `dims`) as a block of
  /// threads per row when its body's inner nests are marked and long
  /// enough (see lanesFor); false, changing nothing, otherwise.
  bool mapRowBlocks(ArrayRef<scf::ForOp> nest, ArrayRef<Dim> dims);

  /// A group with a reduction that lanesFor gives a block per output, as
  /// an scf nest marked parallel over the outputs (one iteration when there
  /// are none) around what one thread does for each member, its reduction
  /// loops marked: mapBody's mapRowBlocks makes the kernel. False, changing
  /// nothing, for other groups.
  bool rowNestForGroup(ArrayRef<linalg::LinalgOp> group);

  //===--------------------------------------------------------------------===//
  // Serial kernels
  //===--------------------------------------------------------------------===//

  /// Moves `run` (ops in order, with host-only ops possibly between them)
  /// into a one-thread kernel placed at the last op of the run.
  LogicalResult wrapSerial(ArrayRef<Operation *> run);

  /// Ops that stay on the host: allocation and views (pointer arithmetic
  /// on descriptors), and pure ops on host values.
  static bool isHostOp(Operation &op,
                       const llvm::SmallPtrSetImpl<Operation *> &device);

  RematMapToGPUOptions options;
};

/// Replaces loads from constant splat globals by the constant: the globals
/// live in host memory, which kernels cannot read. Fails on any other
/// global a kernel would read.
LogicalResult foldConstantGlobals(func::FuncOp func);

} // namespace mlir::remat::detail

#endif // REMAT_LIB_CONVERSION_GPUMAPPING_H
