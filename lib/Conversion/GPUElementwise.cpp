//===- GPUElementwise.cpp - Thread-per-element kernels --------------------===//
//
// One thread per output element of a linalg op, or per iteration of a
// parallel loop nest, over the linearized iteration space; consecutive
// linalg ops over one thread space whose threads touch only their own
// elements share a kernel.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

bool KernelMapper::threadDims(linalg::LinalgOp op,
                              SmallVectorImpl<unsigned> &parallel) {
  parallel.clear();
  if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(
          ranges, [](int64_t r) { return ShapedType::isDynamic(r) || r <= 0; }))
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

bool KernelMapper::isThreadIndexed(AffineMap map, ArrayRef<unsigned> parallel) {
  if (map.getNumResults() != parallel.size())
    return false;
  for (auto [e, d] : llvm::zip(map.getResults(), parallel)) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || dim.getPosition() != d)
      return false;
  }
  return true;
}

void KernelMapper::emitThread(OpBuilder &kb, linalg::LinalgOp op,
                              ValueRange pivs, DenseMap<Value, Owned> &owned,
                              bool markReductions) {
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
      accs.push_back(
          arith::ConstantOp::create(kb, loc, element, kb.getZeroAttr(element)));
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

void KernelMapper::mapGroup(ArrayRef<linalg::LinalgOp> group) {
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
  buildKernel(b, first.getLoc(), dims, options.blockSize,
              [&](OpBuilder &kb, ValueRange pivs) {
                DenseMap<Value, Owned> owned;
                for (linalg::LinalgOp op : group)
                  emitThread(kb, op, pivs, owned);
              });
  for (linalg::LinalgOp op : group)
    op->erase();
}

SmallVector<int64_t> KernelMapper::threadExtents(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges(), out;
  SmallVector<unsigned> parallel;
  threadDims(op, parallel);
  for (unsigned d : parallel)
    out.push_back(ranges[d]);
  return out;
}

bool KernelMapper::fusible(ArrayRef<linalg::LinalgOp> group,
                           linalg::LinalgOp op) {
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

LogicalResult KernelMapper::mapLinalgOps(func::FuncOp func) {
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
      if (options.blockReductions && rowNestForGroup(group.ops))
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

bool KernelMapper::mapParallel(scf::ParallelOp loop) {
  return mapNestAroundParallel({}, loop, loop);
}

bool KernelMapper::mapParallelFor(scf::ForOp outer) {
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
  buildKernel(b, outer.getLoc(), *dims, options.blockSize,
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

bool KernelMapper::mapNestAroundParallel(ArrayRef<scf::ForOp> fors,
                                         scf::ParallelOp inner,
                                         Operation *root) {
  if (!inner.getInitVals().empty())
    return false;
  std::optional<SmallVector<Dim>> dims =
      staticDims(inner.getLowerBound(), inner.getUpperBound(), inner.getStep());
  if (!dims)
    return false;
  OpBuilder b(root);
  buildKernel(b, root->getLoc(), *dims, options.blockSize,
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
