//===- Passes.td - Lowering passes -------------------------*- tablegen -*-===//
//
// From train to linalg, and the small steps around upstream bufferization
// that keep the memory model true after lowering.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_CONVERSION_PASSES_TD
#define REMAT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrainToLinalg : Pass<"convert-train-to-linalg", "ModuleOp"> {
  let summary = "Lowers train ops to linalg on tensors";
  let description = [{
    Each train op becomes linalg ops whose only fresh tensor is the op's
    result (`tensor.empty`, filled when it accumulates), so that after
    one-shot bufferization every train op allocates exactly its result, as
    the memory model assumes. `train.sgd_update` of a function argument
    writes into the argument (the parameter is donated). Discardable
    attributes such as `train.recompute` are copied to the linalg ops, and
    the op order is kept.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def RematDropDonatedResults : Pass<"remat-drop-donated-results", "ModuleOp"> {
  let summary = "Removes step results that are updated parameters in place";
  let description = [{
    After one-shot bufferization an updated parameter is returned as the
    argument's own buffer. This pass removes such results from `train.step`
    functions (the driver reads the update from its own buffer) and fails if
    an `updated_param` result did not bufferize in place, since a copy would
    break the memory model. Upstream `drop-equivalent-buffer-results` does
    the same for private functions only; the step is public.
  }];
}

def RematMatmulToRuntime : Pass<"remat-matmul-to-runtime", "func::FuncOp"> {
  let summary = "Replaces matrix products on memrefs by calls into the runtime";
  let description = [{
    Calls `remat_rt_matmul_f32` / `remat_rt_matmul_f64` (C interface,
    `C += op(A) op(B)`), which the runtime implements with an optimized BLAS
    when one was found at build time. Transposed operands (from
    `linalg.matmul` indexing maps) become BLAS transpose flags, so no
    transposed copy is allocated. Batched products (the `linalg.generic`
    `train.batch_matmul` lowers to: loops batch, m, n parallel and k a
    reduction, body `out + lhs * rhs`) call `remat_rt_batch_matmul_f32` /
    `_f64` the same way, one BLAS product per batch entry.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def RematConvLibrary : Pass<"remat-conv-library", "func::FuncOp"> {
  let summary = "Hands f32 convolutions to oneDNN, with the workspace each needs";
  let description = [{
    The CPU target's choice of convolution code, made on the train step
    before remat so that the solver sees its memory. An f32 `train.conv2d`,
    `train.conv2d_grad_input` or `train.conv2d_grad_weight` handed to
    oneDNN gets `remat.conv_layout` (`"blocked"` or `"plain"`) and
    `remat.workspace_bytes`: the bytes that primitive needs at `threads`
    threads. The op reports them as its workspace (held while it computes),
    the lowering tags its loop nest with both, and `remat-conv-to-runtime`
    allocates the workspace as a buffer of the step and calls
    `remat_rt_conv2d_dnnl_f32`.

    `layout=blocked` (fastest) lets oneDNN pick blocked layouts, with
    copies of the three operands in the workspace. `layout=plain` keeps the
    step's NCHW buffers, so the workspace is oneDNN's scratch (which can be
    larger: im2col and per-thread buffers); a depthwise convolution (one
    input channel per group), which oneDNN runs several times slower in
    plain layouts than the runtime's kernels do, keeps the kernels.
    `layout=auto` takes, per convolution, plain or else blocked, the first
    whose operands, result and workspace stay within the largest such
    footprint of any op in the step (the floor no schedule goes below), and
    else the runtime's kernels. f64 convolutions,
    and all of them when the runtime has no oneDNN, keep the kernels: no
    attributes.
  }];
  let options = [
    Option<"threads", "threads", "int", /*default=*/"0",
           "Threads the step will run convolutions on (0: REMAT_NUM_THREADS, "
           "else the machine's hardware threads, as the runtime)">,
    Option<"layout", "layout", "std::string", /*default=*/"\"auto\"",
           "blocked (oneDNN's fastest layouts, operand copies in the "
           "workspace), plain (the step's buffers; scratch only) or auto "
           "(per convolution, plain or else blocked within the step's floor)">
  ];
}

def RematConvToRuntime : Pass<"remat-conv-to-runtime", "func::FuncOp"> {
  let summary = "Replaces convolution loop nests on memrefs by runtime calls";
  let description = [{
    The train lowering tags the loop nest of each `train.conv2d`,
    `train.conv2d_grad_input` and `train.conv2d_grad_weight` with a
    `remat.conv2d` attribute (kind and window). On a bufferized function,
    this pass replaces each tagged top-level nest of f32 or f64 with a call
    to `remat_rt_conv2d_f32` / `remat_rt_conv2d_f64` (C interface), which
    the runtime implements with kernels that allocate no tensor memory and
    add each output's terms in the nest's order (the weight gradient aside).
    A nest whose operands are not what the tag promises (two reads and one
    write of identity-layout rank-4 memrefs whose shapes agree with the
    window) stays as it is. A nest whose tag carries a workspace (see
    `remat-conv-library`) becomes a call to `remat_rt_conv2d_dnnl_f32` with
    a buffer of that many bytes allocated right before it and freed right
    after (run it before `remat-plan-arena` so that the plan places it);
    such a nest must match.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def RematMapToGPU : Pass<"remat-map-to-gpu", "func::FuncOp"> {
  let summary = "Turns a bufferized step's loop nests into GPU kernels";
  let description = [{
    Runs on a bufferized step. Each top-level linalg op becomes a
    `gpu.launch` with one thread per output element, which loops over the
    reduction dimensions with the accumulator in a register (same summation
    order as `convert-linalg-to-loops`). Consecutive linalg ops with the
    same thread space share one kernel when every buffer one of them writes
    is accessed by all of them only at the accessing thread's element (a
    zero fill and the matmul or reduction accumulating into it, a bias and
    the activation after it); each thread runs them in order and reuses
    what it stored instead of reloading it. Only allocations and constants
    may lie between them (they move above the kernel); a free ends a
    group, so allocations and frees keep the schedule's order and peak.
    A matmul-like contraction (one m, n and k dimension, at most one batch
    dimension, operands indexed by dimensions only, k at least 16) gets a
    shared-memory tiled kernel instead, with `tile-contractions` (the
    default): 16 x 16 threads per block, up to 4 x 4 outputs per thread in
    registers (8 x 8 threads with 8 x 8 outputs each where m and n are both
    at least 64 and `register-tile` is 8; not the default until it is timed
    on a GPU), A and B tiles of 16
    along k copied into workgroup memory
    between barriers; each output still sums k in order, so the bits are
    the same. A fill of its output before it becomes the accumulators'
    start, and fused ops after it run per output on the register.
    Reductions that one thread per output would leave the GPU mostly idle
    on (fewer than 2^17 outputs, each folding at least 128 values) run a
    block of threads per output instead, with `block-reductions` (the
    default; 32 to 1024 threads, a power of two): each `scf.for` nest the
    train lowering marked `remat.parallel` whose body holds nests marked
    `remat.reduction` (row statistics of softmax, normalization,
    cross-entropy) or `remat.parallel`, and each linalg reduction with few
    outputs (a loss, a bias gradient), which first becomes such a nest. The threads of a block
    split each inner nest's iterations (strided, so neighbours read
    neighbours); a reduction's partial results, from the identity of its
    associative update (addf, mulf, maximumf, ...), combine in a fixed tree
    through workgroup memory and then with the accumulator's initial value.
    The order of the sums differs from one thread's, but is the same on
    every run and in every build of the step. Row-level stores are made
    by the block's first thread; they and every inner nest that writes
    memory stand between barriers.
    Linalg ops whose outputs are not
    indexed by parallel dimensions alone become `scf.parallel` loops first.
    Each top-level `scf.parallel` without reductions, each `scf.for` nest
    the train lowering marked `remat.parallel`, and each `scf.for` nest
    around one `scf.parallel` becomes a `gpu.launch` over its linearized
    iteration space (the innermost dimension fastest, so neighbouring
    threads access neighbouring elements). Remaining top-level compute
    (scalar reductions, scatters) runs in one-thread kernels, since the
    host cannot read device memory. `memref.alloc` / `memref.dealloc`
    become `gpu.alloc` / `gpu.dealloc` in place, so the schedule's
    allocation order, and thus its peak, is the device's. Loads from splat
    constant globals become constants.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block">,
    Option<"tileContractions", "tile-contractions", "bool", /*default=*/"true",
           "Tile matmul-like contractions through shared memory">,
    Option<"blockReductions", "block-reductions", "bool", /*default=*/"true",
           "Run reductions with few outputs as a block of threads each">,
    Option<"registerTile", "register-tile", "int64_t", /*default=*/"4",
           "Largest register tile per thread of tiled contractions (4 or 8)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect"];
}

def RematPlanArena : Pass<"remat-plan-arena", "ModuleOp"> {
  let summary = "Places a bufferized step's buffers at offsets in one arena";
  let description = [{
    On each `train.step` function after bufferization and deallocation:
    every top-level `memref.alloc` of a static, identity-layout type that
    one top-level `memref.dealloc` frees lives from its allocation to that
    free. The pass packs these lifetimes into one byte range (best fit in
    three orders, the smallest arena kept: by size, as TFLite's and XLA's
    greedy buffer assignment do, by lifetime and by program order; each
    buffer 64-byte aligned), allocates that arena once at the start of the
    step, replaces each allocation by a `memref.view` at its offset and
    drops the frees. Buffers that outlive the step (returned gradients, the
    loss) keep their own allocation. The function records
    `remat.arena_bytes`, `remat.arena_live_bytes` (the most bytes of planned
    buffers live at once, alignment excluded) and `remat.arena_offsets`
    (offset and bytes of each buffer in program order).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def RematOutlineLoopNests : Pass<"remat-outline-loop-nests", "ModuleOp"> {
  let summary = "Moves each top-level loop nest into a function, shared by equals";
  let description = [{
    Every op lowers to its own loop nest, so a step is one function with
    thousands of loops in sequence, and LLVM's optimization of such a
    function grows quadratically with the model. This pass moves each
    `scf.for` at the top level of a function into a private function
    (`<function>_nest<N>`, marked `remat.outlined`) called in its place,
    and calls one function for all nests that are the same ops on the same
    types (repeated blocks on the same shapes), so each distinct nest is
    compiled once. Scalar constants are cloned into the new function (so
    LLVM folds them); every other value from outside becomes an argument.
    `remat-compile` makes the outlined functions `noinline`.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
}

def RematMergeGPUModules : Pass<"remat-merge-gpu-modules", "ModuleOp"> {
  let summary = "Moves all outlined kernels into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` gives every kernel its own `gpu.module`; after
    this pass the step has one device module, so one PTX file, one cubin and
    one module load at run time. Kernels are renamed uniquely and the
    `gpu.launch_func` ops follow.
  }];
}

#endif // REMAT_CONVERSION_PASSES_TD
