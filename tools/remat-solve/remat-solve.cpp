//===- remat-solve.cpp - Run a solver on a graph file ---------------------===//
//
// The solvers without IR: read a Checkmate or Moccasin graph, solve it under
// a budget (or each of a list of budgets), check the schedule with the one
// simulator and print the result, with the schedule itself in --json so
// anyone can re-check it.
//
//===----------------------------------------------------------------------===//

#include "remat/Remat/GraphIO.h"
#include "remat/Remat/Solvers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace cl = llvm::cl;
using namespace remat;

static cl::OptionCategory solveCategory("remat-solve options");

static cl::opt<std::string> graphPath(cl::Positional, cl::Required,
                                      cl::desc("<graph.json>"),
                                      cl::cat(solveCategory));
static cl::opt<std::string> budgetText(
    "budget", cl::Required,
    cl::desc("Budget: bytes, or a fraction of the no-remat peak such as "
             "0.7x; a comma-separated list solves each (auto from the "
             "smallest up, each answer carried to the next budget, so its "
             "cost never rises with the budget)"),
    cl::cat(solveCategory));
static cl::opt<std::string> solverName("solver", cl::init("auto"),
                                       cl::desc("Solver name"),
                                       cl::cat(solveCategory));
static cl::opt<double> timeLimit("time-limit", cl::init(10.0),
                                 cl::desc("Solver time limit in seconds"),
                                 cl::cat(solveCategory));
static cl::opt<double> searchSeconds(
    "search-seconds", cl::init(0.0),
    cl::desc("auto: seconds of search beyond its default (restarts from "
             "moved layer boundaries on training graphs, then annealing "
             "from its answer; the result then depends on the machine's "
             "speed)"),
    cl::cat(solveCategory));
static cl::opt<CostBoundEffort> boundEffort(
    "bound", cl::init(CostBoundEffort::Moments),
    cl::desc("The cost lower bound every answer is measured against"),
    cl::values(clEnumValN(CostBoundEffort::Moments, "moments",
                          "each moment alone (milliseconds)"),
               clEnumValN(CostBoundEffort::Windows, "windows",
                          "also chains of windows between moments, which "
                          "see values brought back more than once "
                          "(seconds on 350 nodes)")),
    cl::cat(solveCategory));
static cl::opt<bool>
    json("json",
         cl::desc("Print one JSON object (an array of them for a list of "
                  "budgets)"),
         cl::cat(solveCategory));

static int fail(const std::string &message) {
  llvm::errs() << "remat-solve: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // LLVM's own options (backends, codegen) say nothing about solving.
  cl::HideUnrelatedOptions(solveCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "Runs a rematerialization solver on a graph\n");
  if (!isSolver(solverName))
    return fail("unknown solver '" + solverName +
                "'; expected one of: " + llvm::join(solverNames(), ", "));
  if (!(timeLimit > 0) || !std::isfinite(timeLimit))
    return fail("--time-limit must be a positive number of seconds");
  if (!(searchSeconds >= 0) || !std::isfinite(searchSeconds))
    return fail("--search-seconds must be a number of seconds, zero or more");
  GraphFile file;
  std::string error;
  if (!readGraphFile(graphPath, file, error))
    return fail(error);
  if (std::string why = file.graph.verify(); !why.empty())
    return fail("'" + graphPath + "': " + why);

  SolveResult base = solve("none", file.graph, kNoBudget);
  std::vector<int64_t> budgets;
  if (!parseBudgets(budgetText, base.peakBytes, budgets, error))
    return fail(error);

  SolverOptions options;
  options.timeLimitSeconds = timeLimit;
  options.searchSeconds = searchSeconds;
  std::vector<double> milliseconds;
  std::vector<SolveResult> results =
      solveSweep(solverName, file.graph, budgets, options, &milliseconds);
  llvm::json::Array objects;
  bool allFeasible = true;
  for (size_t i = 0; i < budgets.size(); ++i) {
    SolveResult &r = results[i];
    int64_t budget = budgets[i];
    double ms = milliseconds[i];
    allFeasible &= r.feasible;
    SimResult sim = simulate(file.graph, r.schedule);
    if (!sim.valid)
      return fail("internal error: solver '" + solverName +
                  "' returned an invalid schedule: " + sim.error);
    // A graph whose nodes all cost nothing: every schedule costs what the
    // one without remat does.
    double overhead = base.cost > 0 ? sim.cost / base.cost : 1.0;
    // Outside the solve time.
    auto b0 = std::chrono::steady_clock::now();
    std::optional<double> gap =
        measureAgainstBound(file.graph, budget, boundEffort, sim.cost, r);
    double boundMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - b0)
                         .count();

    if (json) {
      llvm::json::Array events;
      for (const Event &e : r.schedule)
        events.push_back(llvm::json::Array{
            e.kind == Event::Kind::Compute ? "compute" : "free", e.node});
      objects.push_back(llvm::json::Object{
          {"graph", file.name},
          {"format", file.format},
          {"nodes", static_cast<int64_t>(file.graph.size())},
          {"solver", solverName.getValue()},
          {"feasible", r.feasible},
          {"budget_bytes", budget},
          {"peak_bytes", sim.peakBytes},
          {"baseline_peak_bytes", base.peakBytes},
          {"lower_bound_peak_bytes", file.graph.peakLowerBound()},
          {"cost", sim.cost},
          {"baseline_cost", base.cost},
          {"overhead", overhead},
          {"solve_ms", ms},
          {"search_seconds", searchSeconds.getValue()},
          {"bound_ms", boundMs},
          {"bound",
           boundEffort == CostBoundEffort::Windows ? "windows" : "moments"},
          {"optimal", r.optimal ? llvm::json::Value(*r.optimal)
                                : llvm::json::Value(nullptr)},
          {"lower_bound_cost", r.lowerBound ? llvm::json::Value(*r.lowerBound)
                                            : llvm::json::Value(nullptr)},
          {"gap", gap ? llvm::json::Value(*gap) : llvm::json::Value(nullptr)},
          {"schedule", std::move(events)},
      });
      continue;
    }
    llvm::outs() << file.name << " (" << file.graph.size() << " nodes), solver "
                 << solverName << ", budget " << budget
                 << " bytes: " << (r.feasible ? "feasible" : "infeasible")
                 << "\n"
                 << "  peak " << sim.peakBytes << " bytes (no remat "
                 << base.peakBytes << ")\n"
                 << "  cost " << llvm::format("%.6g", sim.cost) << " (no remat "
                 << llvm::format("%.6g", base.cost) << ", overhead "
                 << llvm::format("%.4f", overhead) << "x)\n"
                 << "  solved in " << llvm::format("%.2f", ms) << " ms";
    if (r.optimal && !r.feasible && *r.optimal)
      llvm::outs() << ", proven that no schedule meets the budget";
    else if (r.optimal && r.feasible)
      llvm::outs() << (*r.optimal ? ", proven optimal"
                                  : ", not proven optimal");
    if (r.lowerBound) {
      llvm::outs() << " (cost lower bound "
                   << llvm::format("%.6g", *r.lowerBound);
      if (gap && *gap > 0)
        llvm::outs() << ", gap " << llvm::format("%.2f", 100 * *gap) << "%";
      llvm::outs() << ")";
    }
    llvm::outs() << "\n";
    if (!r.feasible)
      llvm::outs() << "  the smallest budget this solver reaches is "
                   << r.peakBytes << " bytes; no schedule peaks below "
                   << file.graph.peakLowerBound() << " bytes\n";
  }
  // One budget prints one object; a list prints an array of them.
  if (json) {
    llvm::json::Value out = objects.size() == 1
                                ? std::move(objects.front())
                                : llvm::json::Value(std::move(objects));
    llvm::outs() << llvm::formatv("{0}", out) << "\n";
  }
  return allFeasible ? 0 : 2;
}
