//===- ArenaPlan.cpp - Static offsets for a step's buffers ----------------===//
//
// The step's buffers as intervals of program order, packed into one arena
// at compile time: the allocator never sees the schedule's buffers, so
// what the step holds is a number known before it runs.
//
//===----------------------------------------------------------------------===//

#include "remat/Conversion/Passes.h"
#include "remat/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>

namespace mlir::remat {
#define GEN_PASS_DEF_REMATPLANARENA
#include "remat/Conversion/Passes.h.inc"
} // namespace mlir::remat

using namespace mlir;
using namespace mlir::remat;

namespace {
constexpr int64_t kAlignment = 64;

struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t start, end, bytes, offset = -1;
  int64_t padded() const { return llvm::alignTo(bytes, kAlignment); }
};

/// The buffer's bytes, or nothing where the type is not a plain static
/// buffer of whole bytes or its size overflows.
std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8)
    return std::nullopt;
  std::optional<int64_t> bytes = type.getElementTypeBitWidth() / 8;
  for (int64_t d : type.getShape())
    if (bytes)
      bytes = llvm::checkedMul(*bytes, d);
  return bytes;
}

/// Places `order`'s buffers one by one, each at the smallest gap between
/// the placed buffers whose lifetimes overlap its own, or above them all
/// (best fit). Returns the arena's size.
int64_t placeInOrder(ArrayRef<Buffer *> order) {
  SmallVector<Buffer *> placed;
  int64_t arena = 0;
  for (Buffer *b : order) {
    SmallVector<Buffer *> overlapping;
    for (Buffer *p : placed)
      if (p->start < b->end && b->start < p->end)
        overlapping.push_back(p);
    llvm::sort(overlapping, [](const Buffer *x, const Buffer *y) {
      return x->offset < y->offset;
    });
    int64_t best = -1, bestGap = 0, top = 0;
    for (Buffer *p : overlapping) {
      int64_t gap = p->offset - top;
      if (gap >= b->padded() && (best < 0 || gap < bestGap)) {
        best = top;
        bestGap = gap;
      }
      top = std::max(top, p->offset + p->padded());
    }
    b->offset = best >= 0 ? best : top;
    arena = std::max(arena, b->offset + b->padded());
    placed.push_back(b);
  }
  return arena;
}

/// Best fit in three orders, the smallest arena kept: largest first (as
/// TFLite's and XLA's greedy-by-size), longest-lived first, and program
/// order (which stacks a chain of short lifetimes without gaps).
int64_t pack(MutableArrayRef<Buffer> buffers) {
  auto bySize = [](const Buffer *a, const Buffer *b) {
    return a->bytes > b->bytes;
  };
  auto byLifetime = [](const Buffer *a, const Buffer *b) {
    return a->end - a->start > b->end - b->start;
  };
  auto byStart = [](const Buffer *a, const Buffer *b) {
    return a->start < b->start;
  };
  SmallVector<Buffer *> order;
  for (Buffer &b : buffers)
    order.push_back(&b);
  int64_t best = -1;
  SmallVector<int64_t> offsets;
  for (auto cmp : {+bySize, +byLifetime, +byStart}) {
    llvm::stable_sort(order, cmp);
    int64_t arena = placeInOrder(order);
    if (best >= 0 && arena >= best)
      continue;
    best = arena;
    offsets.clear();
    for (Buffer &b : buffers)
      offsets.push_back(b.offset);
  }
  for (auto [b, offset] : llvm::zip_equal(buffers, offsets))
    b.offset = offset;
  return best;
}

/// The most bytes of `buffers` live at once.
int64_t livePeak(ArrayRef<Buffer> buffers) {
  SmallVector<std::pair<int64_t, int64_t>> events;
  for (const Buffer &b : buffers) {
    events.push_back({b.start, b.bytes});
    events.push_back({b.end, -b.bytes});
  }
  // Program order: each position is one op, which allocates or frees.
  llvm::sort(events);
  int64_t live = 0, peak = 0;
  for (auto [at, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

LogicalResult planArena(func::FuncOp func) {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t next = 0;
  for (Operation &op : block)
    position[&op] = next++;
  SmallVector<Buffer> buffers, outside;
  // Allocations the arena does not take: their most bytes live at once
  // (to the end of the step where nothing frees them), or -1 where some
  // size is not static or an allocation is nested in a loop.
  bool known = true;
  func.walk([&](memref::AllocOp alloc) {
    known = known && alloc->getBlock() == &block &&
            staticBytes(alloc.getType()).has_value();
  });
  for (auto alloc : block.getOps<memref::AllocOp>()) {
    std::optional<int64_t> bytes = staticBytes(alloc.getType());
    if (!bytes)
      continue;
    auto keep = [&]() {
      int64_t end = next;
      for (Operation *user : alloc->getUsers())
        if (isa<memref::DeallocOp>(user) && user->getBlock() == &block)
          end = std::min(end, position[user]);
      outside.push_back({alloc, {}, position[alloc], end, *bytes});
    };
    if (*bytes == 0) {
      keep();
      continue;
    }
    memref::DeallocOp dealloc;
    bool single = true;
    for (Operation *user : alloc->getUsers())
      if (auto d = dyn_cast<memref::DeallocOp>(user)) {
        single = single && !dealloc && d->getBlock() == &block;
        dealloc = d;
      }
    if (!dealloc || !single) {
      keep();
      continue;
    }
    buffers.push_back(
        {alloc, dealloc, position[alloc], position[dealloc], *bytes});
  }
  if (buffers.empty())
    return success();
  int64_t arena = pack(buffers);
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&block);
  Location loc = func.getLoc();
  auto arenaType = MemRefType::get({arena}, b.getI8Type());
  // No alignment attribute: the runtime's blocks (and cudaMalloc's) are
  // 64-byte aligned already, and the attribute would make the lowering
  // over-allocate to align by hand.
  Value base = memref::AllocOp::create(b, loc, arenaType);
  SmallVector<int64_t> offsets;
  for (Buffer &buf : buffers) {
    b.setInsertionPoint(buf.alloc);
    Value at =
        arith::ConstantIndexOp::create(b, buf.alloc.getLoc(), buf.offset);
    Value view = memref::ViewOp::create(
        b, buf.alloc.getLoc(), buf.alloc.getType(), base, at, ValueRange{});
    buf.alloc.replaceAllUsesWith(view);
    buf.dealloc.erase();
    buf.alloc.erase();
    offsets.append({buf.offset, buf.bytes});
  }
  b.setInsertionPoint(block.getTerminator());
  memref::DeallocOp::create(b, loc, base);
  func->setAttr("remat.arena_bytes", b.getI64IntegerAttr(arena));
  func->setAttr("remat.arena_live_bytes",
                b.getI64IntegerAttr(livePeak(buffers)));
  func->setAttr("remat.arena_offsets", b.getDenseI64ArrayAttr(offsets));
  func->setAttr("remat.arena_outside_bytes",
                b.getI64IntegerAttr(known ? livePeak(outside) : -1));
  return success();
}

struct PlanArenaPass
    : public mlir::remat::impl::RematPlanArenaBase<PlanArenaPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func->hasAttr(train::TrainDialect::kStepAttr) &&
          failed(planArena(func)))
        return signalPassFailure();
  }
};
} // namespace
