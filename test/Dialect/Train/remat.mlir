// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600" --verify-diagnostics | FileCheck %s
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600 search-seconds=0.05" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SEARCH
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=7600" --cse --canonicalize --mlir-disable-threading 2>/dev/null | FileCheck %s --check-prefix=CSE
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=100%% solver=none" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: remat-opt %s --train-autodiff --train-remat="memory-limit=8KiB solver=chen-sqrt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHEN
// RUN: %python %remat_src/examples/gen-mlp.py --layers 2 --width 4 --batch 8 | remat-opt --train-autodiff --train-remat="memory-limit=804" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HONEST

// Tests that train-remat meets a limit below the no-remat peak by
// recomputing one layer in the backward pass (the second; the first would
// cost as much), marks the clones so
// that CSE keeps them, and reports the re-simulated peak. Time granted
// beyond auto's default search (search-seconds) anneals from that answer,
// the optimum here, and keeps it.
// The model is `examples/gen-mlp.py --layers 4 --width 8 --batch 32`: 8580
// bytes at peak without remat, 3200 of them arguments.

// CHECK-LABEL: func.func @mlp
// The forward pass is unchanged.
// CHECK: %[[M0:.+]] = train.matmul %[[X:.+]], %[[W0:[^ ]+]] : tensor<32x8xf32>, tensor<8x8xf32>
// CHECK: %[[A0:.+]] = train.bias_add %[[M0]], %[[B0:[^ ]+]] :
// CHECK: %[[H0:.+]] = train.relu %[[A0]] :
// CHECK: %[[M1:.+]] = train.matmul %[[H0]], %[[W1:[^ ]+]] :
// CHECK: %[[A1:.+]] = train.bias_add %[[M1]], %[[B1:[^ ]+]] :
// The second activation is dropped after its forward use and recomputed
// right before the backward pass needs it.
// CHECK: %[[R0:.+]] = train.matmul %[[H0]], %[[W1]] {train.recompute = 0 : i64}
// CHECK-NEXT: %[[R1:.+]] = train.bias_add %[[R0]], %[[B1]] {train.recompute = 1 : i64}
// CHECK-NEXT: %[[R2:.+]] = train.relu %[[R1]] {train.recompute = 2 : i64}
// CHECK-NEXT: train.matmul %[[R2]], %{{.+}} {transpose_lhs}
// CHECK-NOT: train.recompute
// CHECK: return

// CSE and canonicalization must not fold the recomputation into the
// original forward ops, although both read the same operands.
// CSE-COUNT-3: train.recompute
// CSE-NOT: train.recompute

// NONE: remark: train-remat: solver 'none', limit 8580 bytes: peak 8580 bytes (was 8580), fixed 3200 bytes (parameters 1152, inputs and labels 2048); extra compute 0 FLOPs (+0.00%), 0 ops recomputed
// Without a limit below the peak no recomputation is forced: no bound is
// printed.
// NONE-NOT: remark: train-remat: solver 'none'{{.*}}no schedule

// Chen's sqrt(n) checkpoints ignore the budget; this one happens to fit,
// at twice the recomputation the bound (met by auto above) allows: no
// "optimal" claim.
// CHEN: remark: train-remat: solver 'chen-sqrt', limit 8192 bytes: peak 7556 bytes (was 8580)
// CHEN-SAME: extra compute 9216 FLOPs (+18.16%), 6 ops recomputed; no schedule within the limit recomputes less than 4608 FLOPs (+9.08%)

// The smallest budget remat-invalid.mlir's error names for the two-layer
// MLP is one the default solver meets.
// HONEST: remark: train-remat: solver 'auto', limit 804 bytes: peak 804 bytes (was 868)
// SEARCH: remark: train-remat: solver 'auto' (0.05 s of extra search), limit 7600 bytes: peak 7556 bytes (was 8580), fixed 3200 bytes (parameters 1152, inputs and labels 2048); extra compute 4608 FLOPs (+9.08%), 3 ops recomputed; optimal

// expected-remark @+1 {{train-remat: solver 'auto', limit 7600 bytes: peak 7556 bytes (was 8580), fixed 3200 bytes (parameters 1152, inputs and labels 2048); extra compute 4608 FLOPs (+9.08%), 3 ops recomputed; optimal: no schedule within the limit recomputes less than 4608 FLOPs (+9.08%)}}
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
  %a0 = train.bias_add %m0, %b0 : tensor<32x8xf32>, tensor<8xf32>
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
