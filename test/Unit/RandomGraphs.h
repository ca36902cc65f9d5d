//===- RandomGraphs.h - Random training graphs for solver tests -*- C++ -*-===//
//
// Graphs shaped like training steps: arguments, a forward DAG with skip
// edges, a loss, and a backward pass that mirrors the forward one (each
// backward node reads the gradient so far and the forward value it
// differentiates), with in-place parameter updates at the end.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_TEST_UNIT_RANDOMGRAPHS_H
#define REMAT_TEST_UNIT_RANDOMGRAPHS_H

#include "remat/Remat/Graph.h"

#include <random>

namespace remat::test {

inline Graph randomTrainingGraph(unsigned seed, int forwardNodes) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> bytes(1, 64);
  std::uniform_real_distribution<double> cost(1.0, 10.0);
  Graph g;
  Node param{"param", 0, 32, false, true, false, false, -1};
  NodeId w = g.addNode(param);
  NodeId x = g.addNode(Node{"x", 0, bytes(rng), false, true, false, false, -1});
  std::vector<NodeId> forward;
  for (int i = 0; i < forwardNodes; ++i) {
    NodeId id = g.addNode(Node{"f" + std::to_string(i), cost(rng), bytes(rng),
                               false, false, false, true, -1});
    g.addEdge(forward.empty() ? x : forward.back(), id);
    if (forward.size() > 2 && rng() % 3 == 0)
      g.addEdge(forward[rng() % (forward.size() - 1)], id);
    if (rng() % 2 == 0)
      g.addEdge(w, id);
    forward.push_back(id);
  }
  NodeId loss = g.addNode(Node{"loss", 1, 4, false, false, true, true, -1});
  g.addEdge(forward.back(), loss);
  NodeId grad = loss;
  NodeId gradW = -1;
  for (int i = forwardNodes - 1; i >= 0; --i) {
    NodeId id =
        g.addNode(Node{"b" + std::to_string(i), cost(rng),
                       g.node(forward[i]).bytes, true, false, false, true, -1});
    g.addEdge(grad, id);
    g.addEdge(forward[i], id);
    if (i > 0 && rng() % 2 == 0)
      g.addEdge(forward[i - 1], id);
    grad = id;
    if (i == forwardNodes / 2) {
      gradW = g.addNode(Node{"dw", 1, 32, true, false, false, true, -1});
      g.addEdge(id, gradW);
    }
  }
  NodeId update = g.addNode(Node{"update", 1, 32, true, false, true, false, w});
  g.addEdge(w, update);
  g.addEdge(gradW, update);
  g.addEdge(grad, update);
  return g;
}

/// A random training graph of residual blocks, shaped like a transformer's
/// or ResNet's: the stream h_k goes through `depth` nodes of block k, and
/// h_{k+1} adds the block's last node to h_k, so the stream values are the
/// forward pass's layer boundaries (the only values a cut between blocks
/// crosses). The backward pass runs the forward nodes in reverse, each
/// reading the gradient so far, its forward value and that value's inputs.
inline Graph randomResidualGraph(unsigned seed, int blocks, int depth) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> bytes(8, 64);
  std::uniform_real_distribution<double> cost(1.0, 10.0);
  Graph g;
  NodeId x = g.addNode(Node{"x", 0, 16, false, true, false, false, -1});
  int64_t streamBytes = 16;
  std::vector<NodeId> forward;
  auto add = [&](const std::string &name, double c, int64_t b,
                 std::vector<NodeId> deps) {
    NodeId id = g.addNode(Node{name, c, b, false, false, false, true, -1});
    for (NodeId d : deps)
      g.addEdge(d, id);
    forward.push_back(id);
    return id;
  };
  NodeId h = add("h0", 1, streamBytes, {x});
  for (int k = 0; k < blocks; ++k) {
    NodeId inner = h;
    for (int i = 0; i < depth; ++i)
      inner = add("b" + std::to_string(k) + "." + std::to_string(i), cost(rng),
                  bytes(rng), {inner});
    h = add("h" + std::to_string(k + 1), 0.5, streamBytes, {h, inner});
  }
  NodeId loss = g.addNode(Node{"loss", 1, 4, false, false, true, true, -1});
  g.addEdge(h, loss);
  NodeId grad = loss;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    NodeId f = *it;
    NodeId id =
        g.addNode(Node{"d" + g.node(f).name, cost(rng), g.node(f).bytes, true,
                       false, it + 1 == forward.rend(), true, -1});
    g.addEdge(grad, id);
    g.addEdge(f, id);
    for (NodeId d : g.deps(f))
      if (!g.node(d).argument)
        g.addEdge(d, id);
    grad = id;
  }
  return g;
}

/// Two random training graphs one after the other, as two micro-batches of
/// gradient accumulation run: values of the second are computed after the
/// first's last reads.
inline Graph twoTrainingGraphs(unsigned seed, int forwardNodes) {
  Graph g;
  for (unsigned k = 0; k < 2; ++k) {
    Graph part = randomTrainingGraph(seed + k, forwardNodes);
    NodeId offset = static_cast<NodeId>(g.size());
    for (NodeId id = 0; id < (NodeId)part.size(); ++id) {
      Node node = part.node(id);
      if (node.overwrites >= 0)
        node.overwrites += offset;
      g.addNode(node);
      for (NodeId d : part.deps(id))
        g.addEdge(d + offset, id + offset);
    }
  }
  return g;
}

/// A computation graph without a backward pass, shaped like Moccasin's
/// random layered graphs: layers of a few nodes, each node reading one or
/// two nodes of the layer before and, often, one of any earlier layer (the
/// long edges that keep values alive across the peak).
inline Graph randomLayeredGraph(unsigned seed, int layers, int width) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> bytes(1, 64);
  std::uniform_real_distribution<double> cost(1.0, 10.0);
  Graph g;
  std::vector<std::vector<NodeId>> layer;
  for (int l = 0; l < layers; ++l) {
    std::vector<NodeId> &here = layer.emplace_back();
    for (int k = 0; k < width; ++k) {
      std::string name = "n" + std::to_string(l) + "_" + std::to_string(k);
      NodeId id = g.addNode(
          Node{name, cost(rng), bytes(rng), false, false, false, true, -1});
      here.push_back(id);
      if (l == 0)
        continue;
      const std::vector<NodeId> &before = layer[l - 1];
      g.addEdge(before[rng() % before.size()], id);
      if (rng() % 2 == 0)
        g.addEdge(before[rng() % before.size()], id);
      if (l > 1 && rng() % 2 == 0) {
        const std::vector<NodeId> &far = layer[rng() % (l - 1)];
        g.addEdge(far[rng() % far.size()], id);
      }
    }
  }
  return g;
}

} // namespace remat::test

#endif // REMAT_TEST_UNIT_RANDOMGRAPHS_H
