//===- BruteForce.h - Exact optimum of tiny graphs by search ----*- C++ -*-===//
//
// Dijkstra over (resident set, computed-at-least-once set): every schedule
// of compute and free events, not just the staged ones Checkmate's MILP
// searches, so it is ground truth for graphs of up to about 8 nodes.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_TEST_UNIT_BRUTEFORCE_H
#define REMAT_TEST_UNIT_BRUTEFORCE_H

#include "remat/Remat/Graph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

namespace remat::test {

/// The least cost of any valid schedule whose peak stays within `budget`,
/// or nullopt when none exists. Graphs without arguments or overwrites.
inline std::optional<double> bruteForceOptimum(const Graph &g, int64_t budget) {
  int n = static_cast<int>(g.size());
  uint32_t all = (1u << n) - 1, outputs = 0;
  for (int i = 0; i < n; ++i)
    if (g.node(i).output)
      outputs |= 1u << i;
  using State = std::pair<uint32_t, uint32_t>; // resident, computed
  std::map<State, double> best;
  using Item = std::tuple<double, uint32_t, uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  queue.push({0.0, 0u, 0u});
  best[{0u, 0u}] = 0;
  auto live = [&](uint32_t resident) {
    int64_t bytes = 0;
    for (int i = 0; i < n; ++i)
      if (resident >> i & 1)
        bytes += g.node(i).bytes;
    return bytes;
  };
  while (!queue.empty()) {
    auto [cost, resident, computed] = queue.top();
    queue.pop();
    if (cost > best[{resident, computed}])
      continue;
    if (computed == all && (resident & outputs) == outputs)
      return cost;
    auto relax = [&](uint32_t r, uint32_t c, double k) {
      auto it = best.find({r, c});
      if (it == best.end() || k < it->second) {
        best[{r, c}] = k;
        queue.push({k, r, c});
      }
    };
    for (int i = 0; i < n; ++i) {
      uint32_t bit = 1u << i;
      if (resident & bit) {
        if (!(outputs & bit))
          relax(resident & ~bit, computed, cost);
        continue;
      }
      bool ready = true;
      for (NodeId d : g.deps(i))
        ready &= (resident >> d & 1) != 0;
      // The node's workspace is held while it computes.
      if (ready && live(resident | bit) + g.node(i).workspace <= budget)
        relax(resident | bit, computed | bit, cost + g.node(i).cost);
    }
  }
  return std::nullopt;
}

} // namespace remat::test

#endif // REMAT_TEST_UNIT_BRUTEFORCE_H
