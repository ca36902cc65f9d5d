// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600" | FileCheck %s
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600 solver=greedy" | FileCheck %s
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600 solver=chen-greedy" | FileCheck %s
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600 solver=chen-sqrt" | FileCheck %s
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600 solver=milp" | FileCheck %s
// RUN: not remat-opt %s --train-autodiff --train-remat="memory-limit=7600 solver=every-layer" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSE

// Tests that no solver recomputes an op marked train.no_recompute, nor
// anything whose recomputation would need it once it is gone. The model is
// remat.mlir's four-layer MLP, where remat recomputes the first layer at
// this limit; with the first bias_add marked, every solver that meets the
// limit recomputes the second layer instead (from the first ReLU, which
// the backward pass keeps anyway), and the one that cannot says so with
// an honest smallest peak.

// CHECK-LABEL: func.func @mlp
// CHECK: %[[A0:.+]] = train.bias_add %{{.+}}, %{{.+}} {train.no_recompute}
// CHECK: %[[H0:.+]] = train.relu %[[A0]]
// CHECK-NOT: train.matmul %{{[^,]+}}, %arg0 {train.recompute
// CHECK-NOT: train.bias_add {{.*}}train.no_recompute
// CHECK: train.matmul %[[H0]], %arg2 {train.recompute
// CHECK-NOT: train.bias_add {{.*}}train.no_recompute
// CHECK: return

// REFUSE: error: memory limit of 7600 bytes cannot be met: the smallest peak the 'every-layer' solver reaches is 8580 bytes

func.func @mlp(%w0: tensor<8x8xf32> {train.role = #train<role param>, train.name = "w0"},
    %b0: tensor<8xf32> {train.role = #train<role param>, train.name = "b0"},
    %w1: tensor<8x8xf32> {train.role = #train<role param>, train.name = "w1"},
    %b1: tensor<8xf32> {train.role = #train<role param>, train.name = "b1"},
    %w2: tensor<8x8xf32> {train.role = #train<role param>, train.name = "w2"},
    %b2: tensor<8xf32> {train.role = #train<role param>, train.name = "b2"},
    %w3: tensor<8x8xf32> {train.role = #train<role param>, train.name = "w3"},
    %b3: tensor<8xf32> {train.role = #train<role param>, train.name = "b3"},
    %x: tensor<32x8xf32> {train.role = #train<role input>, train.name = "x"},
    %y: tensor<32x8xf32> {train.role = #train<role label>, train.name = "y"}) -> tensor<f32> {
  %m0 = train.matmul %x, %w0 : tensor<32x8xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %a0 = train.bias_add %m0, %b0 {train.no_recompute} : tensor<32x8xf32>, tensor<8xf32>
  %h0 = train.relu %a0 : tensor<32x8xf32>
  %m1 = train.matmul %h0, %w1 : tensor<32x8xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %a1 = train.bias_add %m1, %b1 : tensor<32x8xf32>, tensor<8xf32>
  %h1 = train.relu %a1 : tensor<32x8xf32>
  %m2 = train.matmul %h1, %w2 : tensor<32x8xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %a2 = train.bias_add %m2, %b2 : tensor<32x8xf32>, tensor<8xf32>
  %h2 = train.relu %a2 : tensor<32x8xf32>
  %m3 = train.matmul %h2, %w3 : tensor<32x8xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %a3 = train.bias_add %m3, %b3 : tensor<32x8xf32>, tensor<8xf32>
  %loss = train.mse_loss %a3, %y : tensor<32x8xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
