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
#include <numeric>

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

/// Offsets by search over gravity packings, which hold every arena worth
/// having: buffers placed in order of offset, each at the top of the placed
/// buffers its lifetime overlaps. Lifetimes are compressed to the points
/// where one starts or ends; sizes are padded.
class GravitySearch {
public:
  explicit GravitySearch(ArrayRef<Buffer> buffers) {
    SmallVector<int64_t> points;
    for (const Buffer &b : buffers)
      points.append({b.start, b.end});
    llvm::sort(points);
    points.erase(llvm::unique(points), points.end());
    auto at = [&](int64_t p) {
      return llvm::lower_bound(points, p) - points.begin();
    };
    for (const Buffer &b : buffers)
      items.push_back({int(at(b.start)), int(at(b.end)), b.padded()});
    int64_t count = static_cast<int64_t>(points.size()) - 1;
    load.assign(std::max<int64_t>(count, 0), 0);
    for (const Item &i : items)
      for (int t = i.start; t < i.end; ++t)
        load[t] += i.bytes;
  }

  /// No arena is smaller than the most padded bytes live at once.
  int64_t lowerBound() const {
    return load.empty() ? 0 : *llvm::max_element(load);
  }

  /// Places every buffer, taking at each step the first in `rank` among
  /// those that can sit lowest; returns the arena's size.
  int64_t greedy(ArrayRef<int> rank) {
    reset(rank, std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::max());
    Undo undo;
    work += static_cast<int64_t>(items.size() * items.size());
    for (size_t k = 0; k < items.size(); ++k) {
      int pick = -1;
      for (int i : order)
        if (offsets[i] < 0 && (pick < 0 || base[i] < base[pick]))
          pick = i;
      settle(pick, base[pick], undo);
      undo = {};
    }
    return arenaSize();
  }

  /// Looks for offsets within an arena of `capacity` bytes by depth-first
  /// search, trying buffers in `rank` order, for at most `budget`
  /// placements. True when found (then `offsets` holds them).
  bool fits(ArrayRef<int> rank, int64_t capacity, int64_t budget) {
    reset(rank, capacity, budget);
    return feasible(0) && place(0) == Found;
  }

  /// Steps of placement work done so far (points and buffers visited).
  int64_t work = 0;

  int64_t arenaSize() const {
    int64_t top = 0;
    for (auto [item, offset] : llvm::zip_equal(items, offsets))
      top = std::max(top, offset + item.bytes);
    return top;
  }

  SmallVector<int64_t> offsets;

private:
  struct Item {
    int start, end;
    int64_t bytes;
  };
  enum Outcome { Failed, Found, OutOfBudget };

  void reset(ArrayRef<int> rank, int64_t capacity, int64_t budget) {
    order.assign(rank.begin(), rank.end());
    this->capacity = capacity;
    this->budget = budget;
    floor.assign(load.size(), 0);
    remaining = load;
    offsets.assign(items.size(), -1);
    base.assign(items.size(), 0);
    banned.assign(items.size(), -1);
    left = items.size();
  }

  /// Every point can still hold its unplaced bytes above both its floor
  /// and `level`, below which nothing more is placed.
  bool feasible(int64_t level) {
    work += static_cast<int64_t>(floor.size());
    for (auto [f, r] : llvm::zip_equal(floor, remaining))
      if (r && std::max(f, level) + r > capacity)
        return false;
    return true;
  }

  /// Places the unplaced buffers at offsets of at least `level`. Each
  /// branch puts one buffer that can sit lowest there; a buffer tried
  /// there and failed is banned from that offset in later branches (the
  /// orders in which two buffers reach the same offset give the same
  /// state), and the last branch leaves the offset empty.
  Outcome place(int64_t level) {
    if (budget-- <= 0 || work > workLimit)
      return OutOfBudget;
    work += static_cast<int64_t>(items.size());
    if (!left)
      return Found;
    int64_t lowest = std::numeric_limits<int64_t>::max();
    int64_t next = lowest;
    for (int i : order) {
      if (offsets[i] >= 0)
        continue;
      int64_t at = std::max(level, base[i]);
      if (at + items[i].bytes > capacity)
        return Failed;
      if (banned[i] == at)
        continue;
      if (at < lowest) {
        next = std::min(next, lowest);
        lowest = at;
      } else if (at > lowest) {
        next = std::min(next, at);
      }
    }
    if (lowest == std::numeric_limits<int64_t>::max())
      return Failed;
    SmallVector<std::pair<int, int64_t>> bans;
    Outcome outcome = Failed;
    for (int i : order) {
      if (offsets[i] >= 0 || banned[i] == lowest ||
          std::max(level, base[i]) != lowest)
        continue;
      // Buffers of the same lifetime and size are interchangeable.
      if (llvm::any_of(bans, [&](auto ban) {
            const Item &a = items[ban.first], &b = items[i];
            return a.start == b.start && a.end == b.end && a.bytes == b.bytes;
          }))
        continue;
      outcome = put(i, lowest);
      if (outcome != Failed)
        break;
      bans.push_back({i, banned[i]});
      banned[i] = lowest;
    }
    if (outcome == Failed && next != std::numeric_limits<int64_t>::max() &&
        feasible(next))
      outcome = place(next);
    for (auto [i, previous] : llvm::reverse(bans))
      banned[i] = previous;
    return outcome;
  }

  /// What settle() changed: the floor under a buffer, the lowest offsets
  /// it raised.
  struct Undo {
    SmallVector<int64_t> floor;
    SmallVector<std::pair<int, int64_t>> base;
  };

  /// Buffer `i` at `offset`: the floor under it and the lowest offset of
  /// every unplaced buffer it overlaps rise to its top.
  void settle(int i, int64_t offset, Undo &undo) {
    const Item &item = items[i];
    int64_t top = offset + item.bytes;
    work += static_cast<int64_t>(items.size()) + item.end - item.start;
    undo.floor.assign(floor.begin() + item.start, floor.begin() + item.end);
    for (int t = item.start; t < item.end; ++t) {
      floor[t] = top;
      remaining[t] -= item.bytes;
    }
    for (auto [j, other] : llvm::enumerate(items))
      if (offsets[j] < 0 && other.start < item.end && item.start < other.end &&
          base[j] < top) {
        undo.base.push_back({int(j), base[j]});
        base[j] = top;
      }
    offsets[i] = offset;
    --left;
  }

  void unsettle(int i, const Undo &undo) {
    const Item &item = items[i];
    ++left;
    offsets[i] = -1;
    for (auto [j, b] : undo.base)
      base[j] = b;
    for (int t = item.start; t < item.end; ++t) {
      floor[t] = undo.floor[t - item.start];
      remaining[t] += item.bytes;
    }
  }

  /// Buffer `i` at `offset`, then the rest above it; undone unless found.
  Outcome put(int i, int64_t offset) {
    Undo undo;
    settle(i, offset, undo);
    Outcome outcome = feasible(offset) ? place(offset) : Failed;
    if (outcome != Found)
      unsettle(i, undo);
    return outcome;
  }

  SmallVector<Item> items;
  SmallVector<int64_t> load;
  // Search state: the top of the placed buffers at each point, the
  // unplaced bytes live there, each unplaced buffer's lowest offset, the
  // offset each may not take.
  SmallVector<int64_t> floor, remaining, base, banned;
  SmallVector<int> order;
  int64_t capacity = 0, budget = 0;
  size_t left = 0;

public:
  /// The search stops once `work` passes this.
  int64_t workLimit = std::numeric_limits<int64_t>::max();
};

/// A deterministic stream of numbers in [0, 1) (splitmix64).
double nextUniform(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/// The smallest arena found: best fit in three orders (largest first, as
/// TFLite's and XLA's greedy-by-size; longest-lived first; program order),
/// then, while above the padded live peak, gravity packings greedy in
/// several orders (the last ones with seeded noise), then a bounded
/// search for an arena at the live peak and a little above it. Work is
/// bounded by the number of buffers, so the plan is the same on every run.
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
  auto keep = [&](int64_t arena, auto offsetOf) {
    if (best >= 0 && arena >= best)
      return;
    best = arena;
    offsets.clear();
    for (size_t i = 0; i < buffers.size(); ++i)
      offsets.push_back(offsetOf(i));
  };
  for (auto cmp : {+bySize, +byLifetime, +byStart}) {
    llvm::stable_sort(order, cmp);
    keep(placeInOrder(order), [&](size_t i) { return buffers[i].offset; });
  }
  GravitySearch search(buffers);
  int64_t bound = search.lowerBound();
  // About 2^28 steps of placement work in all (a second or less), half of
  // them for the greedy packings.
  constexpr int64_t kWork = int64_t(1) << 28, kRounds = 256;
  int64_t n = static_cast<int64_t>(buffers.size());
  SmallVector<int> rank(buffers.size());
  SmallVector<double> weight(buffers.size());
  uint64_t seed = 0;
  auto rankBy = [&](auto noise) {
    for (auto [i, b] : llvm::enumerate(buffers))
      weight[i] = static_cast<double>(b.end - b.start) *
                  static_cast<double>(b.padded()) * noise();
    std::iota(rank.begin(), rank.end(), 0);
    llvm::stable_sort(rank,
                      [&](int x, int y) { return weight[x] > weight[y]; });
  };
  auto fromSearch = [&](size_t i) { return search.offsets[i]; };
  for (int64_t r = 0; r < kRounds && best > bound && search.work < kWork / 2;
       ++r) {
    rankBy([&] { return r ? 0.5 + nextUniform(seed) : 1.0; });
    keep(search.greedy(rank), fromSearch);
  }
  // The search within a capacity, from the live peak up, with restarts in
  // new orders: a failed branch near the root is not revisited otherwise.
  // It recurses once per buffer, so large steps keep the greedy packings.
  search.workLimit = kWork;
  for (int64_t permille : {0, 10, 20}) {
    int64_t capacity = bound + bound / 1000 * permille;
    for (int64_t r = 0;
         r < kRounds && n <= 2048 && capacity < best && search.work < kWork;
         ++r) {
      rankBy([&] { return 0.5 + nextUniform(seed); });
      if (search.fits(rank, capacity, 4 * n))
        keep(search.arenaSize(), fromSearch);
    }
  }
  for (auto [b, offset] : llvm::zip_equal(buffers, offsets))
    b.offset = offset;
  return best;
}

/// True when no two buffers live at once share a byte.
bool disjoint(ArrayRef<Buffer> buffers) {
  SmallVector<const Buffer *> byOffset;
  for (const Buffer &b : buffers)
    byOffset.push_back(&b);
  llvm::sort(byOffset, [](const Buffer *a, const Buffer *b) {
    return a->offset < b->offset;
  });
  for (size_t i = 0; i < byOffset.size(); ++i)
    for (size_t j = i + 1;
         j < byOffset.size() &&
         byOffset[j]->offset < byOffset[i]->offset + byOffset[i]->padded();
         ++j)
      if (byOffset[i]->start < byOffset[j]->end &&
          byOffset[j]->start < byOffset[i]->end)
        return false;
  return true;
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
    bool single = true, returned = false;
    for (Operation *user : alloc->getUsers()) {
      if (auto d = dyn_cast<memref::DeallocOp>(user)) {
        single = single && !dealloc && d->getBlock() == &block;
        dealloc = d;
      }
      returned = returned || user == block.getTerminator();
    }
    // A returned buffer lives to the end of the step inside the arena; the
    // caller frees the arena through the result's allocated pointer.
    if (returned && !dealloc) {
      buffers.push_back({alloc, {}, position[alloc], next, *bytes});
      continue;
    }
    if (!dealloc || !single || returned) {
      keep();
      continue;
    }
    buffers.push_back(
        {alloc, dealloc, position[alloc], position[dealloc], *bytes});
  }
  if (buffers.empty())
    return success();
  int64_t arena = pack(buffers);
  if (!disjoint(buffers))
    return func.emitError("internal error: the arena plan overlaps buffers "
                          "live at once");
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
    if (buf.dealloc)
      buf.dealloc.erase();
    buf.alloc.erase();
    offsets.append({buf.offset, buf.bytes});
  }
  // With a result in the arena, the arena outlives the step: results share
  // its allocated pointer, which the caller frees once.
  bool held = llvm::any_of(buffers, [](Buffer &buf) { return !buf.dealloc; });
  b.setInsertionPoint(block.getTerminator());
  if (!held)
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
