//===- GPUKernels.h - The kernel builder the GPU mapping shares -*- C++ -*-===//
//
// Kernels over linearized static iteration spaces, and the pieces of block
// reductions (a block of threads per output, combined in a fixed tree):
// shared by remat-map-to-gpu's kernel kinds (GPUMapping.h) and the test
// emulator (test/lib/TestGPUToLoops.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_CONVERSION_GPUKERNELS_H
#define REMAT_LIB_CONVERSION_GPUKERNELS_H

#include "remat/Conversion/Passes.h"

namespace mlir::remat::detail {

/// One dimension of an iteration space with static bounds.
struct Dim {
  int64_t lower, step, extent;
};

Value indexConst(OpBuilder &b, Location loc, int64_t v);

/// The indices of `dims` (innermost fastest) at linear position `linear`:
/// affine.delinearize_index over the extents, then each dimension's step
/// and lower bound.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<Dim> dims);

/// Whether `op` may write memory (or has effects no interface states),
/// asserts aside: what a reduction's body must not do, and what only one
/// thread of a block may do at a row's level.
bool writesMemory(Operation *op);

/// A kernel of `threads` threads in blocks of `blockSize`, whose body
/// computes the thread's linear index and, when it is in range, calls
/// `body` with the induction variables of `dims` (innermost fastest).
void buildKernel(OpBuilder &b, Location loc, ArrayRef<Dim> dims,
                 int64_t blockSize,
                 function_ref<void(OpBuilder &, ValueRange)> body);

/// The static range of a loop; none unless constant and non-empty.
std::optional<Dim> staticDim(Value lb, Value ub, Value step);
std::optional<SmallVector<Dim>> staticDims(ValueRange lbs, ValueRange ubs,
                                           ValueRange steps);

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

/// Threads one thread per output would keep busy enough: 2^17 is about
/// what an H100/H200 holds resident (132 SMs x 1024).
constexpr int64_t kBusyThreads = int64_t(1) << 17;
/// Threads per block for an output: at least a warp, at most a block's
/// limit, and each with at least 4 iterations of the longest inner loop
/// (else the tree's barriers cost more than the loop).
constexpr int64_t kMinLanes = 32, kMaxLanes = 1024, kMinPerLane = 4;

/// Threads per output for `outputs` outputs whose inner loops run at most
/// `trip` iterations each: a power of two in [32, 1024], or 0 where one
/// thread per output is better (always 0 without `blockReductions`).
int64_t lanesFor(bool blockReductions, int64_t outputs, int64_t trip);

/// The associative update `acc' = comb(acc, x)` of an accumulator (region
/// argument `acc`, its next value `next`): the op, if `next` is one whose
/// identity is known and `acc` has no other use.
Operation *combiner(Value acc, Value next);

/// The identity of `comb`'s kind: comb(identity, x) == x.
Value identityOf(OpBuilder &b, Location loc, Operation *comb);

/// `comb`'s kind applied to `x` and `y`.
Value combine(OpBuilder &b, Location loc, Operation *comb, Value x, Value y);

/// A perfect nest the train lowering marked (parallel or reduction)
/// inside a row body: its loops, outermost first, their static ranges,
/// and for a reduction each accumulator's update.
struct InnerNest {
  SmallVector<scf::ForOp> loops;
  SmallVector<Dim> dims;
  int64_t trip = 1;
  bool reduction = false;
  SmallVector<Operation *> combs;
};

std::optional<InnerNest> innerNest(scf::ForOp outer);

/// The block-wide combination, per accumulator, of every thread's
/// `partials`, through `scratch` (lanes values per accumulator) in a fixed
/// tree; the totals, in every thread. Barriers at the kernel's top level
/// only; the last one frees the scratch for the next reduction.
SmallVector<Value> combineLanes(OpBuilder &kb, Location loc, Value tid,
                                int64_t lanes, Value scratch,
                                ArrayRef<Operation *> combs,
                                ValueRange partials);

} // namespace mlir::remat::detail

#endif // REMAT_LIB_CONVERSION_GPUKERNELS_H
