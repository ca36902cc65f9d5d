//===- Internal.h - Solvers shared between files of the core ----*- C++ -*-===//
//
// Entry points of solvers defined outside Solvers.cpp, for its registry.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_LIB_REMAT_INTERNAL_H
#define REMAT_LIB_REMAT_INTERNAL_H

#include "remat/Remat/Solvers.h"

namespace remat::detail {

SolveResult solveMilp(const Graph &graph, int64_t budget,
                      const SolverOptions &options);

} // namespace remat::detail

#endif // REMAT_LIB_REMAT_INTERNAL_H
