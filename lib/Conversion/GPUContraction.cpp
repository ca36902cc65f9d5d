//===- GPUContraction.cpp - Tiled contraction kernels ---------------------===//
//
// Matmul-like contractions as shared-memory tiled kernels, each thread a
// register tile of outputs, summing k in the same order as the
// thread-per-element kernel.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

using namespace mlir;
using namespace mlir::remat;
using namespace mlir::remat::detail;

std::optional<KernelMapper::Contraction>
KernelMapper::tileable(linalg::LinalgOp op) {
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

SmallVector<Value> KernelMapper::dimIndices(AffineMap map,
                                            ArrayRef<Value> ivs) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  return idx;
}

Value KernelMapper::guarded(OpBuilder &b, Location loc, Value cond, Type type,
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

void KernelMapper::mapTiledGroup(ArrayRef<linalg::LinalgOp> group, size_t at,
                                 const Contraction &c) {
  linalg::LinalgOp op = group[at];
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  int64_t batches = c.batch ? c.ranges[*c.batch] : 1;
  int64_t mSize = c.ranges[c.m], nSize = c.ranges[c.n], kSize = c.ranges[c.k];
  bool wide = options.registerTile >= 8 && mSize >= 64 && nSize >= 64;
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
      Value v =
          guarded(ib, loc, cond, elementOf(operand->get()), [&](OpBuilder &gb) {
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
              sb, loc, end, arith::SubIOp::create(sb, loc, cst(sb, kSize), k0));
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
        auto ifOp = scf::IfOp::create(kb, loc, cond, /*withElseRegion=*/false);
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

std::optional<std::pair<size_t, KernelMapper::Contraction>>
KernelMapper::tiledMember(ArrayRef<linalg::LinalgOp> group) {
  if (!options.tileContractions)
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
