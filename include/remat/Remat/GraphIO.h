//===- GraphIO.h - Reading rematerialization graphs from files --*- C++ -*-===//
//
// The benchmark graphs of the field come as networkx node-link JSON, in two
// dialects: Checkmate's training graphs (cost_cpu, cost_ram, backward) and
// Moccasin's random layered graphs (duration, out_cost, param_cost). Both
// become a remat::Graph in topological order.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_REMAT_GRAPHIO_H
#define REMAT_REMAT_GRAPHIO_H

#include "remat/Remat/Graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat {

struct GraphFile {
  Graph graph;
  std::string name;
  /// "checkmate" or "moccasin".
  std::string format;
};

/// Parses a graph from JSON text. On failure returns false and sets `error`
/// to a message naming the problem (and the node or link at fault).
bool parseGraph(const std::string &text, GraphFile &out, std::string &error);

/// Writes `graph` in Checkmate's node-link format, with the fields Remat's
/// own graphs need beyond it ("argument", "output", "recomputable",
/// "overwrites"), which parseGraph reads back.
std::string writeGraph(const Graph &graph, const std::string &name);

/// Reads and parses a file; errors name the file.
bool readGraphFile(const std::string &path, GraphFile &out, std::string &error);

/// Parses a comma-separated list of budgets, each a positive number of
/// bytes or a fraction of `peakBytes` such as 0.7x (a fraction past what 64
/// bits hold is kNoBudget). On failure returns false and sets `error`.
bool parseBudgets(const std::string &text, int64_t peakBytes,
                  std::vector<int64_t> &budgets, std::string &error);

} // namespace remat

#endif // REMAT_REMAT_GRAPHIO_H
