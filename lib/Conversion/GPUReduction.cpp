//===- GPUReduction.cpp - Block reduction kernels -------------------------===//
//
// Reductions with few outputs (a row-wise op's rows, a reduction over a
// linalg op's thread space) as a block of threads per output, combined in
// a fixed tree.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

bool KernelMapper::mapReductionNest(scf::ForOp outer) {
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

bool KernelMapper::mapRowBlocks(ArrayRef<scf::ForOp> nest, ArrayRef<Dim> dims) {
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
  int64_t lanes = lanesFor(options.blockReductions, rows, trip);
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
  Value isFirst = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, tid,
                                        indexConst(kb, loc, 0));

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
              combine(kb, loc, comb, map.lookupOrDefault(top.getInitArgs()[k]),
                      totals[k]));
  }
  outer.erase();
  return true;
}

bool KernelMapper::rowNestForGroup(ArrayRef<linalg::LinalgOp> group) {
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
  if (!lanesFor(options.blockReductions, outputs, trip))
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
