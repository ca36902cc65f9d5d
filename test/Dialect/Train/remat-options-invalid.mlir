// RUN: not remat-opt %s --train-remat 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not remat-opt %s --train-remat="memory-limit=1MiB solver=checkmate" 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not remat-opt %s --train-remat="memory-limit=12parsecs" 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not remat-opt %s --train-remat="memory-limit=lots" 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not remat-opt %s --train-remat="memory-limit=-5" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not remat-opt %s --train-remat="memory-limit=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not remat-opt %s --train-remat="memory-limit=0%%" 2>&1 | FileCheck %s --check-prefix=ZEROPCT
// RUN: not remat-opt %s --train-remat="memory-limit=1MiB time-limit=0" 2>&1 | FileCheck %s --check-prefix=TIME
// RUN: not remat-opt %s --train-remat="memory-limit=1MiB search-seconds=-1" 2>&1 | FileCheck %s --check-prefix=SEARCH

// Tests the errors for train-remat options; each names the function.

// MISSING: remat-options-invalid.mlir:[[@LINE+9]]:1: error: train-remat needs a memory limit (memory-limit=<bytes|KiB|MiB|GiB|percent>)
// SOLVER: remat-options-invalid.mlir:[[@LINE+8]]:1: error: unknown solver 'checkmate'; expected one of: none, every-layer, chen-sqrt, chen-greedy, greedy, milp, auto
// UNIT: remat-options-invalid.mlir:[[@LINE+7]]:1: error: malformed memory limit '12parsecs': expected bytes, a size with KiB/MiB/GiB or KB/MB/GB, or a percentage of the no-remat peak such as 50%
// NUMBER: error: malformed memory limit 'lots'
// NEGATIVE: error: malformed memory limit '-5'
// ZERO: error: memory limit '0' must be at least one byte
// ZEROPCT: error: memory limit '0%' must be at least one byte
// TIME: error: time-limit must be a positive number of seconds, got 0
// SEARCH: remat-options-invalid.mlir:[[@LINE+1]]:1: error: search-seconds must be a number of seconds, zero or more, got -1
func.func @model(%w: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
