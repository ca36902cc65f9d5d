//===- GraphIO.cpp - Reading rematerialization graphs from files ----------===//
//
// Node ids in the files need not be a topological order (Moccasin's are
// not), so nodes are renumbered: in the file's own sequence where it gives
// one (Moccasin's graph.order), else by a stable topological sort; a cycle
// is an error. Moccasin's per-node param_cost (weights resident for the whole
// run) becomes one argument node, so it counts in every peak like our
// parameters.
//
//===----------------------------------------------------------------------===//

#include "remat/Remat/GraphIO.h"
#include "remat/Remat/Solvers.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <optional>
#include <queue>

using namespace remat;

namespace {
struct RawNode {
  std::string name;
  double cost = 0;
  int64_t bytes = 0, resident = 0, workspace = 0;
  bool backward = false;
  // Remat's own extensions of the Checkmate format.
  bool argument = false, output = false, recomputable = true;
  int64_t overwrites = -1;
};
} // namespace

static bool number(const llvm::json::Object &o, llvm::StringRef key,
                   double &out) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return false;
  if (auto d = v->getAsNumber()) {
    out = *d;
    return true;
  }
  return false;
}

/// Ids and sizes are whole numbers up to 2^53 (what a JSON number holds
/// exactly); sizes together at most 2^62, so that no sum the simulator
/// forms (a peak, a budget a little above it) can overflow 64 bits.
constexpr double kMaxExact = 9007199254740992.0;         // 2^53
constexpr double kMaxTotalBytes = 4611686018427387904.0; // 2^62

static bool wholeNumber(double v, double limit) {
  return std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= limit;
}

/// An optional field: absent, or of the right type (a wrong one is an
/// error, not the default).
static bool optionalBool(const llvm::json::Object &o, llvm::StringRef key,
                         bool &out) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return true;
  if (auto b = v->getAsBoolean()) {
    out = *b;
    return true;
  }
  return false;
}

static bool optionalWhole(const llvm::json::Object &o, llvm::StringRef key,
                          int64_t &out) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return true;
  std::optional<double> d = v->getAsNumber();
  if (!d || !wholeNumber(*d, kMaxExact))
    return false;
  out = static_cast<int64_t>(*d);
  return true;
}

bool remat::parseGraph(const std::string &text, GraphFile &out,
                       std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = "not valid JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Array *nodes = root ? root->getArray("nodes") : nullptr;
  const llvm::json::Array *links = root ? root->getArray("links") : nullptr;
  if (!nodes || !links) {
    error = "expected a node-link graph: an object with 'nodes' and 'links' "
            "arrays";
    return false;
  }
  if (nodes->empty()) {
    error = "the graph has no nodes";
    return false;
  }
  if (const llvm::json::Object *g = root->getObject("graph"))
    if (auto name = g->getString("name"))
      out.name = name->str();

  std::map<int64_t, size_t> indexOf;
  std::vector<RawNode> raw;
  bool moccasin = false;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const llvm::json::Object *n = (*nodes)[i].getAsObject();
    std::string where = "node " + std::to_string(i);
    if (!n) {
      error = where + " is not an object";
      return false;
    }
    if (i == 0)
      moccasin = n->get("out_cost") != nullptr;
    RawNode r;
    double id, cost, bytes, resident = 0;
    const char *idKey = moccasin ? "name" : "id";
    const char *costKey = moccasin ? "duration" : "cost_cpu";
    const char *bytesKey = moccasin ? "out_cost" : "cost_ram";
    if (!number(*n, idKey, id) || !number(*n, costKey, cost) ||
        !number(*n, bytesKey, bytes) ||
        (moccasin && !number(*n, "param_cost", resident))) {
      error = where + ": missing numeric field (expected '" + idKey + "', '" +
              costKey + "', '" + bytesKey + "'" +
              (moccasin ? ", 'param_cost'" : "") + ")";
      return false;
    }
    if (bytes < 0 || cost < 0 || resident < 0) {
      error = where + " has a negative size or cost";
      return false;
    }
    if (!wholeNumber(id, kMaxExact)) {
      error = where + ": '" + idKey + "' must be a whole number";
      return false;
    }
    if (!std::isfinite(cost)) {
      error = where + ": '" + costKey + "' must be a finite number";
      return false;
    }
    if (!wholeNumber(bytes, kMaxExact) || !wholeNumber(resident, kMaxExact)) {
      error = where +
              ": sizes must be whole numbers of bytes, at most 2^53 ('" +
              bytesKey + "'" + (moccasin ? ", 'param_cost'" : "") + ")";
      return false;
    }
    if (!indexOf.emplace(static_cast<int64_t>(id), i).second) {
      error = where + " repeats id " + std::to_string((int64_t)id);
      return false;
    }
    r.cost = cost;
    r.bytes = static_cast<int64_t>(bytes);
    r.resident = static_cast<int64_t>(resident);
    if (auto name = n->getString("name"))
      r.name = name->str();
    else
      r.name = std::to_string(static_cast<int64_t>(id));
    if (!moccasin) {
      auto backward = n->getBoolean("backward");
      if (!backward) {
        error = where + ": missing boolean field 'backward'";
        return false;
      }
      r.backward = *backward;
      for (auto [key, field] :
           {std::pair<const char *, bool *>("argument", &r.argument),
            {"output", &r.output},
            {"recomputable", &r.recomputable}})
        if (!optionalBool(*n, key, *field)) {
          error = where + ": '" + key + "' must be true or false";
          return false;
        }
      for (auto [key, field] :
           {std::pair<const char *, int64_t *>("overwrites", &r.overwrites),
            {"workspace", &r.workspace}})
        if (!optionalWhole(*n, key, *field)) {
          error =
              where + ": '" + key + "' must be a whole number, at most 2^53";
          return false;
        }
      if (r.workspace < 0) {
        error = where + " has a negative workspace";
        return false;
      }
    }
    raw.push_back(r);
  }
  double totalBytes = 0;
  for (const RawNode &r : raw)
    totalBytes += static_cast<double>(r.bytes) +
                  static_cast<double>(r.resident) +
                  static_cast<double>(r.workspace);
  if (totalBytes > kMaxTotalBytes) {
    error = "the graph's sizes add up to more than 2^62 bytes";
    return false;
  }

  std::vector<std::vector<size_t>> succ(raw.size());
  std::vector<int> indegree(raw.size(), 0);
  for (size_t i = 0; i < links->size(); ++i) {
    const llvm::json::Object *l = (*links)[i].getAsObject();
    double s = 0, t = 0;
    bool ok =
        l && (moccasin ? number(*l, "0", s) && number(*l, "1", t)
                       : number(*l, "source", s) && number(*l, "target", t));
    std::string where = "link " + std::to_string(i);
    if (!ok) {
      error = where + ": expected numeric " +
              (moccasin ? "'0' and '1'" : "'source' and 'target'");
      return false;
    }
    if (!wholeNumber(s, kMaxExact) || !wholeNumber(t, kMaxExact)) {
      error = where + " names a node that does not exist";
      return false;
    }
    auto si = indexOf.find(static_cast<int64_t>(s));
    auto ti = indexOf.find(static_cast<int64_t>(t));
    if (si == indexOf.end() || ti == indexOf.end()) {
      error = where + " names a node that does not exist";
      return false;
    }
    succ[si->second].push_back(ti->second);
    ++indegree[ti->second];
  }
  // Stable topological order: Kahn's algorithm, lowest file index first.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < raw.size(); ++i)
    if (indegree[i] == 0)
      ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t j : succ[i])
      if (--indegree[j] == 0)
        ready.push(j);
  }
  if (order.size() != raw.size()) {
    for (size_t i = 0; i < raw.size(); ++i)
      if (indegree[i] > 0) {
        error = "the graph has a cycle through node '" + raw[i].name + "'";
        return false;
      }
  }
  // Moccasin's files give the sequence their no-remat peak is measured in
  // ("order" under "graph"): when present, it is the order, so that budgets
  // as fractions of that peak mean what they mean there.
  const llvm::json::Object *meta = root->getObject("graph");
  if (const llvm::json::Array *given =
          meta ? meta->getArray("order") : nullptr) {
    std::vector<size_t> position(raw.size(), raw.size());
    order.clear();
    for (size_t k = 0; k < given->size(); ++k) {
      std::optional<int64_t> id = (*given)[k].getAsInteger();
      auto it = id ? indexOf.find(*id) : indexOf.end();
      if (it == indexOf.end() || position[it->second] != raw.size()) {
        error = "graph.order[" + std::to_string(k) +
                "] names no node, or one listed before it";
        return false;
      }
      position[it->second] = k;
      order.push_back(it->second);
    }
    if (order.size() != raw.size()) {
      error = "graph.order lists " + std::to_string(order.size()) +
              " of the graph's " + std::to_string(raw.size()) + " nodes";
      return false;
    }
    for (size_t i = 0; i < raw.size(); ++i)
      for (size_t j : succ[i])
        if (position[j] < position[i]) {
          error = "graph.order is not a topological order: node '" +
                  raw[j].name + "' comes before its input '" + raw[i].name +
                  "'";
          return false;
        }
  }

  Graph g;
  int64_t resident = 0;
  for (const RawNode &r : raw)
    resident += r.resident;
  std::vector<NodeId> newId(raw.size());
  if (resident > 0) {
    Node weights;
    weights.name = "resident (param_cost)";
    weights.bytes = resident;
    weights.argument = true;
    weights.recomputable = false;
    g.addNode(weights);
  }
  for (size_t i : order) {
    Node n;
    n.name = raw[i].name;
    n.cost = raw[i].cost;
    n.bytes = raw[i].bytes;
    n.workspace = raw[i].workspace;
    n.backward = raw[i].backward;
    n.argument = raw[i].argument;
    n.output = raw[i].output;
    n.recomputable = raw[i].recomputable && !raw[i].argument;
    newId[i] = g.addNode(n);
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].overwrites < 0)
      continue;
    auto it = indexOf.find(raw[i].overwrites);
    if (it == indexOf.end()) {
      error =
          "node '" + raw[i].name + "' overwrites a node that does not exist";
      return false;
    }
    g.node(newId[i]).overwrites = newId[it->second];
  }
  for (size_t i = 0; i < raw.size(); ++i)
    for (size_t j : succ[i])
      g.addEdge(newId[i], newId[j]);
  out.graph = std::move(g);
  out.format = moccasin ? "moccasin" : "checkmate";
  return true;
}

std::string remat::writeGraph(const Graph &graph, const std::string &name) {
  llvm::json::Array nodes, links;
  for (NodeId id = 0; id < (NodeId)graph.size(); ++id) {
    const Node &n = graph.node(id);
    llvm::json::Object o{{"id", id},
                         {"name", n.name},
                         {"backward", n.backward},
                         {"cost_cpu", n.cost},
                         {"cost_ram", n.bytes}};
    if (!n.source.empty())
      o["source"] = n.source;
    if (n.argument)
      o["argument"] = true;
    if (n.output)
      o["output"] = true;
    if (!n.recomputable && !n.argument)
      o["recomputable"] = false;
    if (n.overwrites >= 0)
      o["overwrites"] = n.overwrites;
    if (n.workspace > 0)
      o["workspace"] = n.workspace;
    nodes.push_back(std::move(o));
    for (NodeId u : graph.users(id))
      links.push_back(llvm::json::Object{{"source", id}, {"target", u}});
  }
  llvm::json::Object root{{"directed", true},
                          {"multigraph", false},
                          {"graph", llvm::json::Object{{"name", name}}},
                          {"nodes", std::move(nodes)},
                          {"links", std::move(links)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0}", llvm::json::Value(std::move(root)));
  return out;
}

bool remat::readGraphFile(const std::string &path, GraphFile &out,
                          std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return false;
  }
  if (!parseGraph((*buffer)->getBuffer().str(), out, error)) {
    error = "'" + path + "': " + error;
    return false;
  }
  // A file without a graph name is named by its own.
  if (out.name.empty())
    out.name = llvm::sys::path::stem(path).str();
  return true;
}

bool remat::parseBudgets(const std::string &text, int64_t peakBytes,
                         std::vector<int64_t> &budgets, std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',');
  for (llvm::StringRef part : parts) {
    part = part.trim();
    int64_t budget;
    double value;
    if (part.ends_with("x") && !part.drop_back().getAsDouble(value) &&
        value > 0 && std::isfinite(value)) {
      // Past what 64 bits hold the cast would wrap to a negative budget.
      double bytes = std::floor(value * static_cast<double>(peakBytes));
      budget = bytes < static_cast<double>(kNoBudget)
                   ? static_cast<int64_t>(bytes)
                   : kNoBudget;
    } else if (part.getAsInteger(10, budget) || budget <= 0) {
      error = "malformed budget '" + part.str() +
              "': expected a positive number of bytes or a fraction of the "
              "no-remat peak such as 0.7x (several: a comma-separated list)";
      return false;
    }
    budgets.push_back(budget);
  }
  return true;
}
