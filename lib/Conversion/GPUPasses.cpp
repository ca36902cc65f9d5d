//===- GPUPasses.cpp - Bufferized step to GPU kernels ---------------------===//
//
// Upstream's parallel-loop mapping needs nested scf.parallel levels to give
// blocks and threads and maps at most three dimensions; the step's loops are
// flat nests of any rank, and the lowering also emits scf.for nests whose
// iterations are independent (row-wise ops). Every such nest becomes one
// kernel over its linearized iteration space, the innermost dimension
// fastest so neighbouring threads touch neighbouring elements; consecutive
// linalg ops over one thread space whose threads touch only their own
// elements share a kernel; matmul-like contractions get shared-memory tiled
// kernels. What is left (scalar reductions, scatters) runs
// in one-thread kernels, since the host cannot read device memory.
// Allocation and deallocation stay on the host, in the order the schedule
// put them, as gpu.alloc / gpu.dealloc.
//
//===----------------------------------------------------------------------===//

#include "GPUKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::remat {
#define GEN_PASS_DEF_REMATMAPTOGPU
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

/// Replaces loads from constant splat globals by the constant: the globals
/// live in host memory, which kernels cannot read.
static LogicalResult foldConstantGlobals(func::FuncOp func) {
  SmallVector<memref::LoadOp> loads;
  func.walk([&](memref::LoadOp load) {
    if (load.getMemRef().getDefiningOp<memref::GetGlobalOp>())
      loads.push_back(load);
  });
  for (memref::LoadOp load : loads) {
    auto get = load.getMemRef().getDefiningOp<memref::GetGlobalOp>();
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    auto init =
        global && global.getConstant()
            ? dyn_cast_or_null<DenseElementsAttr>(global.getConstantInitValue())
            : DenseElementsAttr();
    if (!init || !init.isSplat())
      continue;
    OpBuilder b(load);
    Value c = arith::ConstantOp::create(
        b, load.getLoc(), cast<TypedAttr>(init.getSplatValue<Attribute>()));
    load.replaceAllUsesWith(c);
    load.erase();
  }
  WalkResult result = func.walk([&](memref::GetGlobalOp get) {
    if (get->use_empty()) {
      get.erase();
      return WalkResult::advance();
    }
    get.emitError("the CUDA target supports only splat constants; '")
        << get.getName() << "' would be read from host memory by a kernel";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct MapToGPUPass
    : public mlir::remat::impl::RematMapToGPUBase<MapToGPUPass> {
  using RematMapToGPUBase::RematMapToGPUBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("expects a step function of one block");
      return signalPassFailure();
    }
    if (failed(mapLinalgOps(func)) || failed(foldConstantGlobals(func)) ||
        failed(mapBody(func)) || failed(moveAllocationsToDevice(func)))
      return signalPassFailure();
  }

  /// The parallel dimensions of a linalg op this pass gives one thread per
  /// output element: pure buffer semantics, static positive ranges, and
  /// outputs indexed by parallel dimensions only (every named op, and the
  /// lowering's generics); false when the op is not one. (An op without
  /// parallel dimensions, a full reduction, is one thread.)
  static bool threadDims(linalg::LinalgOp op,
                         SmallVectorImpl<unsigned> &parallel) {
    parallel.clear();
    if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1)
      return false;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, [](int64_t r) {
          return ShapedType::isDynamic(r) || r <= 0;
        }))
      return false;
    for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
      if (it == utils::IteratorType::parallel)
        parallel.push_back(d);
    for (OpOperand &init : op.getDpsInitsMutable())
      for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        if (!dim || !llvm::is_contained(parallel, dim.getPosition()))
          return false;
      }
    return true;
  }

  /// Whether `map` indexes exactly by `parallel`, in order: the element the
  /// thread of those indices owns.
  static bool isThreadIndexed(AffineMap map, ArrayRef<unsigned> parallel) {
    if (map.getNumResults() != parallel.size())
      return false;
    for (auto [e, d] : llvm::zip(map.getResults(), parallel)) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || dim.getPosition() != d)
        return false;
    }
    return true;
  }

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
                  DenseMap<Value, Owned> &owned, bool markReductions = false) {
    Location loc = op.getLoc();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned> parallel, reduction;
    threadDims(op, parallel);
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (!llvm::is_contained(parallel, d))
        reduction.push_back(d);
    SmallVector<Value> ivs(ranges.size());
    for (auto [k, d] : llvm::enumerate(parallel))
      ivs[d] = pivs[k];
    auto indices = [&](OpBuilder &ib, AffineMap map) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults()) {
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          idx.push_back(ivs[dim.getPosition()]);
        else
          idx.push_back(affine::AffineApplyOp::create(
              ib, loc, AffineMap::get(map.getNumDims(), 0, e), ivs));
      }
      return idx;
    };
    // A load, or the value this thread stored there before.
    auto load = [&](OpBuilder &ib, Value buffer, AffineMap map) -> Value {
      auto it = owned.find(buffer);
      if (it != owned.end() && isThreadIndexed(map, parallel))
        return it->second.value;
      return memref::LoadOp::create(ib, loc, buffer, indices(ib, map));
    };
    Block *payload = op.getBlock();
    // The payload on the current indices, from accumulators `accs`.
    auto body = [&](OpBuilder &ib, ValueRange accs) {
      IRMapping map;
      for (OpOperand *in : op.getDpsInputOperands()) {
        BlockArgument arg = op.getMatchingBlockArgument(in);
        if (arg.use_empty())
          continue;
        if (!isa<MemRefType>(in->get().getType())) { // a scalar operand
          map.map(arg, in->get());
          continue;
        }
        map.map(arg, load(ib, in->get(), op.getMatchingIndexingMap(in)));
      }
      for (auto [arg, acc] : llvm::zip(op.getRegionOutputArgs(), accs))
        map.map(arg, acc);
      SmallVector<Value> results;
      for (Operation &inner : *payload) {
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          map.map(index.getResult(), ivs[index.getDim()]);
        } else if (auto yield = dyn_cast<linalg::YieldOp>(inner)) {
          for (Value v : yield.getValues())
            results.push_back(map.lookupOrDefault(v));
        } else {
          ib.clone(inner, map);
        }
      }
      return results;
    };
    // Outputs the payload reads start from memory; the others are only
    // written (an unused zero stands in).
    SmallVector<Value> accs;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      Type element = arg.getType();
      if (arg.use_empty())
        accs.push_back(arith::ConstantOp::create(kb, loc, element,
                                                 kb.getZeroAttr(element)));
      else
        accs.push_back(load(kb, init.get(), op.getMatchingIndexingMap(&init)));
    }
    SmallVector<Value> results;
    if (reduction.empty()) {
      results = body(kb, accs);
    } else {
      SmallVector<Value> lbs, ubs, steps;
      for (unsigned d : reduction) {
        lbs.push_back(indexConst(kb, loc, 0));
        ubs.push_back(indexConst(kb, loc, ranges[d]));
        steps.push_back(indexConst(kb, loc, 1));
      }
      scf::LoopNest nest = scf::buildLoopNest(
          kb, loc, lbs, ubs, steps, accs,
          [&](OpBuilder &ib, Location, ValueRange rivs, ValueRange iter) {
            for (auto [k, d] : llvm::enumerate(reduction))
              ivs[d] = rivs[k];
            return scf::ValueVector(body(ib, iter));
          });
      results.assign(nest.results.begin(), nest.results.end());
      if (markReductions)
        for (scf::ForOp loop : nest.loops)
          loop->setAttr(kReductionLoopAttr, kb.getUnitAttr());
    }
    for (auto [init, v] : llvm::zip(op.getDpsInitsMutable(), results)) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      auto store =
          memref::StoreOp::create(kb, loc, v, init.get(), indices(kb, map));
      auto it = owned.find(init.get());
      if (it != owned.end() && isThreadIndexed(map, parallel)) {
        // The element's earlier value was only ever read from the register
        // (no other thread reads it: see fusible), so its store is dead (a
        // zero fill fused with the matmul that overwrites it).
        it->second.store->erase();
        it->second = {v, store};
      } else if (isThreadIndexed(map, parallel)) {
        owned[init.get()] = {v, store};
      } else {
        owned.erase(init.get());
      }
    }
  }

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

  static std::optional<Contraction> tileable(linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
      return std::nullopt;
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
        dims->k.size() != 1 || dims->batch.size() > 1)
      return std::nullopt;
    Contraction c{std::nullopt, dims->m[0], dims->n[0], dims->k[0],
                  op.getStaticLoopRanges()};
    if (!dims->batch.empty())
      c.batch = dims->batch[0];
    if (llvm::any_of(
            c.ranges,
            [](int64_t r) { return ShapedType::isDynamic(r) || r <= 0; }) ||
        c.ranges[c.k] < kTileK)
      return std::nullopt;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()) ||
          !op.getMatchingIndexingMap(&operand).isProjectedPermutation(
              /*allowZeroInResults=*/false))
        return std::nullopt;
    }
    if (!op.getBlock()->getOps<linalg::IndexOp>().empty())
      return std::nullopt;
    return c;
  }

  /// The indices `map` (of loop dimensions only) gives for `ivs`.
  static SmallVector<Value> dimIndices(AffineMap map, ArrayRef<Value> ivs) {
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults())
      idx.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    return idx;
  }

  /// `then` under `cond`, or else zero, when `cond` is set; `then` alone
  /// otherwise.
  static Value guarded(OpBuilder &b, Location loc, Value cond, Type type,
                       function_ref<Value(OpBuilder &)> then) {
    if (!cond)
      return then(b);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{type}, cond,
                                  /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    scf::YieldOp::create(tb, loc, then(tb));
    OpBuilder eb = ifOp.getElseBodyBuilder();
    scf::YieldOp::create(
        eb, loc,
        arith::ConstantOp::create(eb, loc, eb.getZeroAttr(type)).getResult());
    return ifOp.getResult(0);
  }

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
                     const Contraction &c) {
    linalg::LinalgOp op = group[at];
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    int64_t batches = c.batch ? c.ranges[*c.batch] : 1;
    int64_t mSize = c.ranges[c.m], nSize = c.ranges[c.n], kSize = c.ranges[c.k];
    bool wide = registerTile >= 8 && mSize >= 64 && nSize >= 64;
    const int64_t side = wide ? 8 : 16, threads = side * side;
    auto micro = [&](int64_t extent) -> int64_t {
      if (wide)
        return 8;
      return extent >= 4 * side ? 4 : extent >= 2 * side ? 2 : 1;
    };
    int64_t rm = micro(mSize), rn = micro(nSize);
    int64_t tileM = side * rm, tileN = side * rn;
    int64_t mBlocks = llvm::divideCeil(mSize, tileM),
            nBlocks = llvm::divideCeil(nSize, tileN),
            kSteps = llvm::divideCeil(kSize, kTileK);
    bool raggedM = mSize % tileM, raggedN = nSize % tileN,
         raggedK = kSize % kTileK;

    OpOperand *lhs = op.getDpsInputOperand(0), *rhs = op.getDpsInputOperand(1);
    OpOperand &out = op.getDpsInitsMutable()[0];
    auto elementOf = [](Value v) {
      return cast<MemRefType>(v.getType()).getElementType();
    };
    Type accType = elementOf(out.get());
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto tileType = [&](Value operand, int64_t extent) {
      return MemRefType::get({kTileK, extent + 1}, elementOf(operand),
                             MemRefLayoutAttrInterface(), workgroup);
    };
    Value fill;
    for (linalg::LinalgOp member : group.take_front(at))
      fill = cast<linalg::FillOp>(member).getInputs()[0];

    OpBuilder b(group.front());
    Value one = indexConst(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, indexConst(b, loc, batches * mBlocks * nBlocks), one, one,
        indexConst(b, loc, threads), one, one, /*dynamicSharedMemorySize=*/
        Value(), /*asyncTokenType=*/Type(), /*asyncDependencies=*/{},
        TypeRange{tileType(lhs->get(), tileM), tileType(rhs->get(), tileN)});
    Block &entry = launch.getBody().front();
    Value lhsTile = launch.getWorkgroupAttributions()[0],
          rhsTile = launch.getWorkgroupAttributions()[1];
    OpBuilder kb = OpBuilder::atBlockEnd(&entry);
    gpu::TerminatorOp::create(kb, loc);
    kb.setInsertionPoint(entry.getTerminator());
    auto cst = [&](OpBuilder &ib, int64_t v) { return indexConst(ib, loc, v); };
    auto add = [&](OpBuilder &ib, Value x, Value y) -> Value {
      return arith::AddIOp::create(ib, loc, x, y);
    };
    auto below = [&](OpBuilder &ib, Value x, int64_t bound) -> Value {
      return arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::ult, x,
                                   cst(ib, bound));
    };
    auto both = [&](OpBuilder &ib, Value x, Value y) -> Value {
      if (!x || !y)
        return x ? x : y;
      return arith::AndIOp::create(ib, loc, x, y);
    };

    Value bid = launch.getBlockIds().x, tid = launch.getThreadIds().x;
    Value rest = arith::DivUIOp::create(kb, loc, bid, cst(kb, nBlocks));
    Value n0 = arith::MulIOp::create(
        kb, loc, arith::RemUIOp::create(kb, loc, bid, cst(kb, nBlocks)),
        cst(kb, tileN));
    Value m0 = arith::MulIOp::create(
        kb, loc, arith::RemUIOp::create(kb, loc, rest, cst(kb, mBlocks)),
        cst(kb, tileM));
    Value batch = arith::DivUIOp::create(kb, loc, rest, cst(kb, mBlocks));
    Value tx = arith::RemUIOp::create(kb, loc, tid, cst(kb, side));
    Value ty = arith::DivUIOp::create(kb, loc, tid, cst(kb, side));
    SmallVector<Value> rows, cols; // within the tile
    for (int64_t i = 0; i < rm; ++i)
      rows.push_back(add(kb, ty, cst(kb, side * i)));
    for (int64_t j = 0; j < rn; ++j)
      cols.push_back(add(kb, tx, cst(kb, side * j)));

    // The loop indices of output (i, j), and whether it exists.
    auto outputIvs = [&](OpBuilder &ib, int64_t i, int64_t j) {
      SmallVector<Value> ivs(c.ranges.size());
      if (c.batch)
        ivs[*c.batch] = batch;
      ivs[c.m] = add(ib, m0, rows[i]);
      ivs[c.n] = add(ib, n0, cols[j]);
      return ivs;
    };
    auto exists = [&](OpBuilder &ib, ArrayRef<Value> ivs) {
      return both(ib, raggedM ? below(ib, ivs[c.m], mSize) : Value(),
                  raggedN ? below(ib, ivs[c.n], nSize) : Value());
    };
    AffineMap outMap = op.getMatchingIndexingMap(&out);
    SmallVector<Value> init;
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) {
        if (fill) {
          init.push_back(fill);
          continue;
        }
        SmallVector<Value> ivs = outputIvs(kb, i, j);
        init.push_back(
            guarded(kb, loc, exists(kb, ivs), accType, [&](OpBuilder &ib) {
              return memref::LoadOp::create(ib, loc, out.get(),
                                            dimIndices(outMap, ivs))
                  .getResult();
            }));
      }

    // Copies the k-step at `k0` of `operand` (m or n dimension `dim`,
    // `extent` wide in the tile, from `base`) to `tile`, as tile[k][x].
    auto copyTile = [&](OpBuilder &ib, OpOperand *operand, Value tile,
                        unsigned dim, int64_t extent, Value base, int64_t size,
                        bool ragged, Value k0) {
      AffineMap map = op.getMatchingIndexingMap(operand);
      bool kFastest =
          cast<AffineDimExpr>(map.getResults().back()).getPosition() == c.k;
      for (int64_t r = 0; r < extent * kTileK / threads; ++r) {
        Value e = add(ib, tid, cst(ib, threads * r));
        int64_t fast = kFastest ? kTileK : extent;
        Value lo = arith::RemUIOp::create(ib, loc, e, cst(ib, fast));
        Value hi = arith::DivUIOp::create(ib, loc, e, cst(ib, fast));
        Value kk = kFastest ? lo : hi, xx = kFastest ? hi : lo;
        SmallVector<Value> ivs(c.ranges.size());
        if (c.batch)
          ivs[*c.batch] = batch;
        ivs[dim] = add(ib, base, xx);
        ivs[c.k] = add(ib, k0, kk);
        Value cond = both(ib, ragged ? below(ib, ivs[dim], size) : Value(),
                          raggedK ? below(ib, ivs[c.k], kSize) : Value());
        Value v = guarded(
            ib, loc, cond, elementOf(operand->get()), [&](OpBuilder &gb) {
              return memref::LoadOp::create(gb, loc, operand->get(),
                                            dimIndices(map, ivs))
                  .getResult();
            });
        memref::StoreOp::create(ib, loc, v, tile, ValueRange{kk, xx});
      }
    };
    Block *payload = op.getBlock();
    auto applyPayload = [&](OpBuilder &ib, Value x, Value y, Value acc) {
      IRMapping map;
      map.map(payload->getArguments(), ValueRange{x, y, acc});
      for (Operation &inner : payload->without_terminator())
        ib.clone(inner, map);
      return map.lookupOrDefault(payload->getTerminator()->getOperand(0));
    };

    auto steps = scf::ForOp::create(
        kb, loc, cst(kb, 0), cst(kb, kSteps), one, init,
        [&](OpBuilder &sb, Location, Value step, ValueRange accs) {
          Value k0 = arith::MulIOp::create(sb, loc, step, cst(sb, kTileK));
          copyTile(sb, lhs, lhsTile, c.m, tileM, m0, mSize, raggedM, k0);
          copyTile(sb, rhs, rhsTile, c.n, tileN, n0, nSize, raggedN, k0);
          gpu::BarrierOp::create(sb, loc);
          // The last step of a ragged k stops at k: no padding enters a sum.
          Value end = cst(sb, kTileK);
          if (raggedK)
            end = arith::MinSIOp::create(
                sb, loc, end,
                arith::SubIOp::create(sb, loc, cst(sb, kSize), k0));
          auto inner = scf::ForOp::create(
              sb, loc, cst(sb, 0), end, cst(sb, 1), accs,
              [&](OpBuilder &ib, Location, Value kk, ValueRange acc) {
                SmallVector<Value> a, bv, next;
                for (Value r : rows)
                  a.push_back(memref::LoadOp::create(ib, loc, lhsTile,
                                                     ValueRange{kk, r}));
                for (Value col : cols)
                  bv.push_back(memref::LoadOp::create(ib, loc, rhsTile,
                                                      ValueRange{kk, col}));
                for (int64_t i = 0; i < rm; ++i)
                  for (int64_t j = 0; j < rn; ++j)
                    next.push_back(
                        applyPayload(ib, a[i], bv[j], acc[i * rn + j]));
                scf::YieldOp::create(ib, loc, next);
              });
          gpu::BarrierOp::create(sb, loc);
          scf::YieldOp::create(sb, loc, inner.getResults());
        });

    SmallVector<unsigned> parallel;
    threadDims(op, parallel);
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) {
        SmallVector<Value> ivs = outputIvs(kb, i, j);
        OpBuilder eb = kb;
        if (Value cond = exists(kb, ivs)) {
          auto ifOp =
              scf::IfOp::create(kb, loc, cond, /*withElseRegion=*/false);
          eb = ifOp.getThenBodyBuilder();
        }
        Value acc = steps.getResult(i * rn + j);
        DenseMap<Value, Owned> owned;
        owned[out.get()] = {acc,
                            memref::StoreOp::create(eb, loc, acc, out.get(),
                                                    dimIndices(outMap, ivs))};
        SmallVector<Value> pivs;
        for (unsigned d : parallel)
          pivs.push_back(ivs[d]);
        for (linalg::LinalgOp member : group.drop_front(at + 1))
          emitThread(eb, member, pivs, owned);
      }
    for (linalg::LinalgOp member : group)
      member->erase();
  }

  /// The member of `group` mapTiledGroup takes, if any.
  std::optional<std::pair<size_t, Contraction>>
  tiledMember(ArrayRef<linalg::LinalgOp> group) {
    if (!tileContractions)
      return std::nullopt;
    for (size_t at = 0; at < group.size(); ++at) {
      linalg::LinalgOp op = group[at];
      std::optional<Contraction> c = tileable(op);
      if (!c)
        continue;
      Value out = op.getDpsInits()[0];
      bool onlyFills = llvm::all_of(group.take_front(at), [&](auto member) {
        auto fill = dyn_cast<linalg::FillOp>(member.getOperation());
        return fill && fill.getOutputs()[0] == out;
      });
      if (!onlyFills)
        return std::nullopt;
      return std::make_pair(at, *c);
    }
    return std::nullopt;
  }

  /// One kernel for `group`, linalg ops that threadDims accepts with the
  /// same thread space, at the first op: each thread runs every op's work
  /// for its indices in order (see fusible).
  void mapGroup(ArrayRef<linalg::LinalgOp> group) {
    if (auto tiled = tiledMember(group))
      return mapTiledGroup(group, tiled->first, tiled->second);
    linalg::LinalgOp first = group.front();
    SmallVector<int64_t> ranges = first.getStaticLoopRanges();
    SmallVector<Dim> dims;
    SmallVector<unsigned> parallel;
    threadDims(first, parallel);
    for (unsigned d : parallel)
      dims.push_back(Dim{0, 1, ranges[d]});
    OpBuilder b(first);
    buildKernel(b, first.getLoc(), dims, blockSize,
                [&](OpBuilder &kb, ValueRange pivs) {
                  DenseMap<Value, Owned> owned;
                  for (linalg::LinalgOp op : group)
                    emitThread(kb, op, pivs, owned);
                });
    for (linalg::LinalgOp op : group)
      op->erase();
  }

  /// The extents of an op's thread space, in its order.
  static SmallVector<int64_t> threadExtents(linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges(), out;
    SmallVector<unsigned> parallel;
    threadDims(op, parallel);
    for (unsigned d : parallel)
      out.push_back(ranges[d]);
    return out;
  }

  /// Whether `op` may join `group` in one kernel: the same thread space,
  /// every buffer a member writes accessed by every member only at the
  /// element of the accessing thread (so no thread reads what another
  /// writes), and every buffer a fresh allocation or an argument (no views
  /// that could alias). Then running the ops one after another per thread
  /// is running them one after another.
  static bool fusible(ArrayRef<linalg::LinalgOp> group, linalg::LinalgOp op) {
    if (threadExtents(op) != threadExtents(group.front()))
      return false;
    SmallVector<linalg::LinalgOp> all(group);
    all.push_back(op);
    llvm::SmallPtrSet<Value, 8> written;
    for (linalg::LinalgOp member : all)
      for (OpOperand &init : member.getDpsInitsMutable())
        written.insert(init.get());
    for (linalg::LinalgOp member : all) {
      SmallVector<unsigned> parallel;
      threadDims(member, parallel);
      for (OpOperand &operand : member->getOpOperands()) {
        Value v = operand.get();
        if (!isa<MemRefType>(v.getType()))
          continue;
        if (!isa<BlockArgument>(v) && !v.getDefiningOp<memref::AllocOp>())
          return false;
        if (written.contains(v) &&
            !isThreadIndexed(member.getMatchingIndexingMap(&operand), parallel))
          return false;
      }
    }
    return true;
  }

  /// Every top-level linalg op: a kernel, or else parallel loops (for
  /// mapBody). Consecutive ops that fusible accepts share one kernel (a
  /// zero fill and the matmul or reduction accumulating into it, a bias and
  /// the activation after it). Only allocations and constants may sit
  /// between them (they move above the kernel); a free ends a group, so
  /// the schedule's order of allocations and frees, and its peak, stay.
  LogicalResult mapLinalgOps(func::FuncOp func) {
    struct Group {
      SmallVector<linalg::LinalgOp> ops;
      SmallVector<Operation *> hoist; // what lies between its members
    };
    SmallVector<Group> groups;
    SmallVector<Operation *> between;
    bool open = false; // whether the last group may still grow
    for (Operation &op : func.getBody().front()) {
      auto l = dyn_cast<linalg::LinalgOp>(op);
      if (!l) {
        if (open && isa<memref::AllocOp, arith::ConstantOp>(op)) {
          between.push_back(&op);
        } else {
          open = false;
          between.clear();
        }
        continue;
      }
      SmallVector<unsigned> parallel;
      bool mappable = threadDims(l, parallel);
      if (open && mappable && fusible(groups.back().ops, l)) {
        llvm::append_range(groups.back().hoist, between);
        between.clear();
        groups.back().ops.push_back(l);
        continue;
      }
      between.clear();
      groups.push_back({{l}, {}});
      open = mappable;
    }
    for (Group &group : groups) {
      linalg::LinalgOp op = group.ops.front();
      SmallVector<unsigned> parallel;
      if (threadDims(op, parallel)) {
        for (Operation *h : group.hoist)
          h->moveBefore(op);
        if (blockReductions && rowNestForGroup(group.ops))
          continue;
        mapGroup(group.ops);
        continue;
      }
      IRRewriter rewriter(op);
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
        return op->emitError("cannot lower this op to loops for the GPU");
      rewriter.eraseOp(op);
    }
    return success();
  }

  /// A parallel loop nest with static bounds and no reductions, from
  /// convert-linalg-to-parallel-loops: one thread per iteration.
  bool mapParallel(scf::ParallelOp loop) {
    return mapNestAroundParallel({}, loop, loop);
  }

  /// An scf.for nest the lowering marked parallel: the marked loops that are
  /// perfectly nested (besides constants) become the kernel's threads.
  bool mapParallelFor(scf::ForOp outer) {
    if (!outer->hasAttr(kParallelLoopAttr) || outer.getNumResults() != 0)
      return false;
    SmallVector<scf::ForOp> nest = {outer};
    while (true) {
      scf::ForOp inner;
      bool perfect = true;
      for (Operation &op : nest.back().getBody()->without_terminator()) {
        auto f = dyn_cast<scf::ForOp>(op);
        if (f && !inner && f->hasAttr(kParallelLoopAttr) &&
            f.getNumResults() == 0)
          inner = f;
        else if (!isa<arith::ConstantOp>(op))
          perfect = false;
      }
      if (!inner || !perfect)
        break;
      nest.push_back(inner);
    }
    SmallVector<Value> lbs, ubs, steps;
    for (scf::ForOp f : nest) {
      lbs.push_back(f.getLowerBound());
      ubs.push_back(f.getUpperBound());
      steps.push_back(f.getStep());
    }
    std::optional<SmallVector<Dim>> dims = staticDims(lbs, ubs, steps);
    if (!dims)
      return false;
    if (mapRowBlocks(nest, *dims))
      return true;
    OpBuilder b(outer);
    buildKernel(b, outer.getLoc(), *dims, blockSize,
                [&](OpBuilder &kb, ValueRange ivs) {
                  IRMapping map;
                  for (auto [f, iv] : llvm::zip(nest, ivs))
                    map.map(f.getInductionVar(), iv);
                  for (auto [i, f] : llvm::enumerate(nest))
                    for (Operation &op : f.getBody()->without_terminator())
                      if (i + 1 == nest.size() || &op != nest[i + 1])
                        kb.clone(op, map);
                });
    outer.erase();
    return true;
  }

  /// An scf.for nest around one scf.parallel, as convert-linalg-to-parallel-
  /// loops emits for reductions over outer dimensions (a bias gradient):
  /// linalg's parallel dimensions index distinct outputs, so each thread
  /// runs the whole reduction for its own elements, in the original order.
  bool mapReductionNest(scf::ForOp outer) {
    if (outer.getNumResults() != 0)
      return false;
    SmallVector<scf::ForOp> nest = {outer};
    scf::ParallelOp inner;
    while (!inner) {
      Operation *next = nullptr;
      for (Operation &op : nest.back().getBody()->without_terminator()) {
        if (isa<arith::ConstantOp>(op))
          continue;
        if (next)
          return false;
        next = &op;
      }
      if (auto f = dyn_cast_or_null<scf::ForOp>(next);
          f && f.getNumResults() == 0)
        nest.push_back(f);
      else if (auto p = dyn_cast_or_null<scf::ParallelOp>(next))
        inner = p;
      else
        return false;
    }
    return mapNestAroundParallel(nest, inner, outer);
  }

  /// The kernel for `inner` (one thread per iteration) whose threads each
  /// run the loops of `fors` (outermost first) around inner's body; `root`,
  /// the outermost op, is replaced.
  bool mapNestAroundParallel(ArrayRef<scf::ForOp> fors, scf::ParallelOp inner,
                             Operation *root) {
    if (!inner.getInitVals().empty())
      return false;
    std::optional<SmallVector<Dim>> dims = staticDims(
        inner.getLowerBound(), inner.getUpperBound(), inner.getStep());
    if (!dims)
      return false;
    OpBuilder b(root);
    buildKernel(b, root->getLoc(), *dims, blockSize,
                [&](OpBuilder &kb, ValueRange ivs) {
                  IRMapping map;
                  map.map(inner.getInductionVars(), ivs);
                  OpBuilder::InsertionGuard guard(kb);
                  for (scf::ForOp f : fors) {
                    auto loop = scf::ForOp::create(
                        kb, f.getLoc(), map.lookupOrDefault(f.getLowerBound()),
                        map.lookupOrDefault(f.getUpperBound()),
                        map.lookupOrDefault(f.getStep()));
                    map.map(f.getInductionVar(), loop.getInductionVar());
                    kb.setInsertionPoint(loop.getBody()->getTerminator());
                    for (Operation &op : f.getBody()->without_terminator())
                      if (isa<arith::ConstantOp>(op))
                        kb.clone(op, map);
                  }
                  for (Operation &op : inner.getBody()->without_terminator())
                    kb.clone(op, map);
                });
    root->erase();
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Block reductions: a block of threads per output.
  //===--------------------------------------------------------------------===//

  /// The row nest `nest` (marked parallel, over `dims`) as a block of
  /// threads per row when its body's inner nests are marked and long
  /// enough (see lanesFor); false, changing nothing, otherwise.
  bool mapRowBlocks(ArrayRef<scf::ForOp> nest, ArrayRef<Dim> dims) {
    Block *body = scf::ForOp(nest.back()).getBody();
    DenseMap<Operation *, InnerNest> inner;
    int64_t rows = 1, trip = 0;
    size_t accs = 0;
    Type accType;
    for (const Dim &d : dims)
      rows *= d.extent;
    for (Operation &op : body->without_terminator()) {
      if (auto f = dyn_cast<scf::ForOp>(op)) {
        std::optional<InnerNest> n = innerNest(f);
        if (!n)
          return false;
        trip = std::max(trip, n->trip);
        for (Operation *comb : n->combs) {
          Type t = comb->getResult(0).getType();
          if (accType && t != accType)
            return false;
          accType = t;
        }
        accs = std::max(accs, n->combs.size());
        inner[f] = std::move(*n);
      } else if (op.getNumRegions() ||
                 (writesMemory(&op) && !isa<memref::StoreOp>(op))) {
        return false;
      }
    }
    int64_t lanes = lanesFor(blockReductions, rows, trip);
    if (inner.empty() || !lanes)
      return false;

    scf::ForOp outer = nest.front();
    Location loc = outer.getLoc();
    OpBuilder b(outer);
    Value one = indexConst(b, loc, 1);
    SmallVector<Type> workgroup;
    if (accs)
      workgroup.push_back(
          MemRefType::get({static_cast<int64_t>(accs) * lanes}, accType,
                          MemRefLayoutAttrInterface(),
                          gpu::AddressSpaceAttr::get(
                              b.getContext(), gpu::AddressSpace::Workgroup)));
    auto launch = gpu::LaunchOp::create(
        b, loc, indexConst(b, loc, rows), one, one, indexConst(b, loc, lanes),
        one, one, /*dynamicSharedMemorySize=*/Value(),
        /*asyncTokenType=*/Type(), /*asyncDependencies=*/{}, workgroup);
    Block &entry = launch.getBody().front();
    OpBuilder kb = OpBuilder::atBlockEnd(&entry);
    gpu::TerminatorOp::create(kb, loc);
    kb.setInsertionPoint(entry.getTerminator());
    Value tid = launch.getThreadIds().x;
    Value scratch;
    if (accs)
      scratch = launch.getWorkgroupAttributions()[0];
    Value isFirst = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq,
                                          tid, indexConst(kb, loc, 0));

    IRMapping map;
    SmallVector<Value> rowIvs =
        delinearize(kb, loc, launch.getBlockIds().x, dims);
    for (auto [k, loop] : llvm::enumerate(nest))
      map.map(scf::ForOp(loop).getInductionVar(), rowIvs[k]);
    for (scf::ForOp loop : nest.drop_back())
      for (Operation &op : loop.getBody()->without_terminator())
        if (isa<arith::ConstantOp>(op))
          kb.clone(op, map);

    // The iterations of `n` this thread takes: tid, tid + lanes, ...; in
    // each, the nest's indices mapped and its levels' constants cloned.
    auto strided =
        [&](const InnerNest &n, ValueRange inits,
            function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> step) {
          return scf::ForOp::create(
              kb, loc, tid, indexConst(kb, loc, n.trip),
              indexConst(kb, loc, lanes), inits,
              [&](OpBuilder &ib, Location, Value i, ValueRange iter) {
                SmallVector<Value> ivs = delinearize(ib, loc, i, n.dims);
                for (auto [k, loop] : llvm::enumerate(n.loops))
                  map.map(scf::ForOp(loop).getInductionVar(), ivs[k]);
                for (scf::ForOp loop : ArrayRef(n.loops).drop_back())
                  for (Operation &op : loop.getBody()->without_terminator())
                    if (isa<arith::ConstantOp>(op))
                      ib.clone(op, map);
                scf::YieldOp::create(ib, loc, step(ib, iter));
              });
        };
    for (Operation &op : body->without_terminator()) {
      auto it = inner.find(&op);
      if (it == inner.end()) {
        if (!isa<memref::StoreOp>(op)) {
          kb.clone(op, map);
          continue;
        }
        // A row-level store: the block's first thread makes it once every
        // thread is done with what it overwrites, and the others wait
        // before reading anything.
        gpu::BarrierOp::create(kb, loc);
        auto ifOp = scf::IfOp::create(kb, loc, isFirst, false);
        OpBuilder tb = ifOp.getThenBodyBuilder();
        tb.clone(op, map);
        gpu::BarrierOp::create(kb, loc);
        continue;
      }
      const InnerNest &n = it->second;
      scf::ForOp innermost = n.loops.back();
      Block *nbody = innermost.getBody();
      if (!n.reduction) {
        // Writes, between barriers like a row-level store's.
        gpu::BarrierOp::create(kb, loc);
        strided(n, {}, [&](OpBuilder &ib, ValueRange) {
          for (Operation &o : nbody->without_terminator())
            ib.clone(o, map);
          return SmallVector<Value>();
        });
        gpu::BarrierOp::create(kb, loc);
        continue;
      }
      SmallVector<Value> identities;
      for (Operation *comb : n.combs)
        identities.push_back(identityOf(kb, loc, comb));
      scf::ForOp partial =
          strided(n, identities, [&](OpBuilder &ib, ValueRange iter) {
            map.map(innermost.getRegionIterArgs(), iter);
            for (Operation &o : nbody->without_terminator())
              ib.clone(o, map);
            SmallVector<Value> next;
            for (Value v : nbody->getTerminator()->getOperands())
              next.push_back(map.lookupOrDefault(v));
            return next;
          });
      SmallVector<Value> totals = combineLanes(kb, loc, tid, lanes, scratch,
                                               n.combs, partial.getResults());
      scf::ForOp top = n.loops.front();
      for (auto [k, comb] : llvm::enumerate(n.combs))
        map.map(top.getResult(k),
                combine(kb, loc, comb,
                        map.lookupOrDefault(top.getInitArgs()[k]), totals[k]));
    }
    outer.erase();
    return true;
  }

  /// A group with a reduction that lanesFor gives a block per output, as
  /// an scf nest marked parallel over the outputs (one iteration when there
  /// are none) around what one thread does for each member, its reduction
  /// loops marked: mapBody's mapRowBlocks makes the kernel. False, changing
  /// nothing, for other groups.
  bool rowNestForGroup(ArrayRef<linalg::LinalgOp> group) {
    // Contractions keep their tiles, or with tile-contractions=false one
    // thread per output: the bits the tiles are checked against.
    if (llvm::any_of(group, [](linalg::LinalgOp op) { return tileable(op); }))
      return false;
    SmallVector<int64_t> extents = threadExtents(group.front());
    int64_t outputs = 1, trip = 0;
    for (int64_t e : extents)
      outputs *= e;
    for (linalg::LinalgOp member : group) {
      SmallVector<unsigned> parallel;
      threadDims(member, parallel);
      SmallVector<int64_t> ranges = member.getStaticLoopRanges();
      int64_t folded = 1;
      for (unsigned d = 0; d < ranges.size(); ++d)
        if (!llvm::is_contained(parallel, d))
          folded *= ranges[d];
      if (parallel.size() < ranges.size())
        trip = std::max(trip, folded);
    }
    if (!lanesFor(blockReductions, outputs, trip))
      return false;
    linalg::LinalgOp first = group.front();
    Location loc = first.getLoc();
    OpBuilder b(first);
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t e : extents.empty() ? SmallVector<int64_t>{1} : extents) {
      lbs.push_back(indexConst(b, loc, 0));
      ubs.push_back(indexConst(b, loc, e));
      steps.push_back(indexConst(b, loc, 1));
    }
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, [&](OpBuilder &nb, Location, ValueRange ivs) {
          DenseMap<Value, Owned> owned;
          for (linalg::LinalgOp op : group)
            emitThread(nb, op, extents.empty() ? ValueRange() : ivs, owned,
                       /*markReductions=*/true);
        });
    for (scf::ForOp loop : nest.loops)
      loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
    for (linalg::LinalgOp op : group)
      op->erase();
    return true;
  }

  /// Moves `run` (ops in order, with host-only ops possibly between them)
  /// into a one-thread kernel placed at the last op of the run.
  LogicalResult wrapSerial(ArrayRef<Operation *> run) {
    if (run.empty())
      return success();
    Operation *last = run.back();
    Location loc = run.front()->getLoc();
    OpBuilder b(last);
    Value one = indexConst(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    Block &entry = launch.getBody().front();
    OpBuilder kb = OpBuilder::atBlockEnd(&entry);
    auto term = gpu::TerminatorOp::create(kb, loc);
    for (Operation *op : run)
      op->moveBefore(term);
    for (Operation *op : run)
      for (Value v : op->getResults())
        for (Operation *user : v.getUsers())
          if (!launch->isProperAncestor(user))
            return op->emitError("the CUDA target cannot use a value computed "
                                 "on the device in host code");
    return success();
  }

  /// Ops that stay on the host: allocation and views (pointer arithmetic
  /// on descriptors), and pure ops on host values.
  static bool isHostOp(Operation &op,
                       const llvm::SmallPtrSetImpl<Operation *> &device) {
    if (isa<memref::AllocOp, memref::DeallocOp, func::ReturnOp, gpu::LaunchOp>(
            op) ||
        isa<ViewLikeOpInterface>(op))
      return true;
    if (!isPure(&op) || op.getNumRegions() != 0)
      return false;
    return llvm::none_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && device.contains(def);
    });
  }

  LogicalResult mapBody(func::FuncOp func) {
    Block &body = func.getBody().front();
    llvm::SmallPtrSet<Operation *, 16> device;
    SmallVector<Operation *> run;
    auto flush = [&]() {
      LogicalResult r = wrapSerial(run);
      run.clear();
      device.clear();
      return r;
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flush()))
          return failure();
        if (mapParallel(loop))
          continue;
      } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
        if (failed(flush()))
          return failure();
        if (loop->hasAttr(kParallelLoopAttr) ? mapParallelFor(loop)
                                             : mapReductionNest(loop))
          continue;
      }
      // A free ends a run: moving compute across it would change the peak.
      if (isa<memref::DeallocOp, func::ReturnOp, gpu::LaunchOp>(op)) {
        if (failed(flush()))
          return failure();
        continue;
      }
      if (isHostOp(op, device))
        continue;
      run.push_back(&op);
      device.insert(&op);
    }
    return flush();
  }

  LogicalResult moveAllocationsToDevice(func::FuncOp func) {
    SmallVector<Operation *> allocs;
    WalkResult result = func.walk([&](Operation *op) {
      if (!isa<memref::AllocOp, memref::DeallocOp>(op))
        return WalkResult::advance();
      if (op->getParentOp() != func) {
        op->emitError("the CUDA target allocates device memory only at the "
                      "top level of the step");
        return WalkResult::interrupt();
      }
      allocs.push_back(op);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    for (Operation *op : allocs) {
      OpBuilder b(op);
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto dev = gpu::AllocOp::create(
            b, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
            ValueRange{}, alloc.getDynamicSizes(), alloc.getSymbolOperands(),
            /*hostShared=*/false);
        alloc.replaceAllUsesWith(dev.getMemref());
      } else {
        gpu::DeallocOp::create(b, op->getLoc(), /*asyncToken=*/Type(),
                               ValueRange{},
                               cast<memref::DeallocOp>(op).getMemref());
      }
      op->erase();
    }
    return success();
  }
};
} // namespace
