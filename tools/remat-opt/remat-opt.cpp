//===- remat-opt.cpp - mlir-opt with the train dialect --------------------===//
//
// The test and exploration driver: every upstream dialect and pass plus
// Remat's, and Remat's test passes (test/lib).
//
//===----------------------------------------------------------------------===//

#include "remat/InitAll.h"

#include "TestPasses.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::remat::registerAllDialects(registry);
  mlir::remat::registerAllPasses();
  mlir::remat::test::registerTestPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Remat optimizer driver\n", registry));
}
