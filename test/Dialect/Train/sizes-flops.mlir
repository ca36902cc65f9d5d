// RUN: remat-opt %s --train-print-memory --verify-diagnostics
// RUN: not remat-opt %s --train-autodiff --train-remat=memory-limit=1GiB 2>&1 | FileCheck %s

// Every tensor fits, the matmul's FLOPs (2 x 10^12 x 3 x 10^9) do not: the
// memory model refuses the op (its count saturates) instead of wrapping.
// CHECK: error: 'train.matmul' op has a FLOP count past what 64 bits hold
// CHECK-NOT: remark
func.func @flops(%w: tensor<3000000000x1000000xf16> {train.role = #train<role param>},
                 %x: tensor<1000000x3000000000xf16> {train.role = #train<role input>},
                 %y: tensor<1000000x1000000xf16> {train.role = #train<role label>})
    -> tensor<f16> {
  // expected-error @+1 {{'train.matmul' op has a FLOP count past what 64 bits hold}}
  %p = train.matmul %x, %w : tensor<1000000x3000000000xf16>, tensor<3000000000x1000000xf16> -> tensor<1000000x1000000xf16>
  %l = train.mse_loss %p, %y : tensor<1000000x1000000xf16> -> tensor<f16>
  return %l : tensor<f16>
}
