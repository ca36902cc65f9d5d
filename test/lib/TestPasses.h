//===- TestPasses.h - Test-only passes --------------------------*- C++ -*-===//
//
// Passes that exist for tests: registered in remat-opt, and added by
// remat-compile's --test-gpu-mapping; not part of the compiler library.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_TEST_LIB_TESTPASSES_H
#define REMAT_TEST_LIB_TESTPASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace mlir::remat::test {

/// remat-test-gpu-to-loops: runs remat-map-to-gpu's kernels as host loops.
std::unique_ptr<Pass> createTestGPUToLoopsPass();

/// Adds remat-test-gpu-to-loops on every function of `pm`'s module.
void addTestGPUToLoopsPass(OpPassManager &pm);

/// Registers every test pass with the global registry.
void registerTestPasses();

} // namespace mlir::remat::test

#endif // REMAT_TEST_LIB_TESTPASSES_H
