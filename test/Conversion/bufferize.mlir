// RUN: remat-opt %s --split-input-file --convert-train-to-linalg --remat-bufferize-pipeline --verify-diagnostics | FileCheck %s

// Tests that bufferization keeps the memory model: one allocation per train
// op, each freed right after its last use, updated parameters written in
// place and dropped from the results.

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[W:[^:]+]]: memref<4xf32>, %[[X:[^:]+]]: memref<4xf32>) -> (memref<f32> {train.role = #train<role loss>})
// CHECK: %[[H:.+]] = memref.alloc() : memref<4xf32>
// CHECK: linalg.generic {{.+}} ins(%[[X]] : memref<4xf32>) outs(%[[H]] : memref<4xf32>)
// CHECK: %[[L:.+]] = memref.alloc() : memref<f32>
// CHECK: linalg.fill {{.+}} outs(%[[L]] : memref<f32>)
// CHECK: linalg.generic {{.+}} ins(%[[H]], %[[W]] : memref<4xf32>, memref<4xf32>) outs(%[[L]] : memref<f32>)
// CHECK: %[[D:.+]] = memref.alloc() : memref<4xf32>
// CHECK: linalg.generic {{.+}} ins(%[[W]], %[[H]], %{{.+}} : memref<4xf32>, memref<4xf32>, memref<f32>) outs(%[[D]] : memref<4xf32>)
// h dies after its last use, the gradient; the constant seed is a global.
// CHECK: memref.dealloc %[[H]] : memref<4xf32>
// The update writes into the parameter; the gradient dies right after.
// CHECK: linalg.generic {{.+}} ins(%[[D]] : memref<4xf32>) outs(%[[W]] : memref<4xf32>)
// CHECK: memref.dealloc %[[D]] : memref<4xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: return %[[L]] : memref<f32>
func.func @step(%w: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<f32> {train.role = #train<role loss>},
        tensor<4xf32> {train.role = #train<role updated_param>, train.param = 0})
    attributes {train.step} {
  %h = train.relu %x : tensor<4xf32>
  %l = train.mse_loss %h, %w : tensor<4xf32> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %d = train.mse_loss_grad %w, %h, %one : tensor<4xf32>, tensor<f32>
  %u = train.sgd_update %w, %d {learning_rate = 0.1 : f64} : tensor<4xf32>
  return %l, %u : tensor<f32>, tensor<4xf32>
}

// -----

// A parameter read after its update cannot be updated in place: one-shot
// bufferization copies it, which the memory model does not allow.
// expected-error @+1 {{result 0 (an updated parameter) was not bufferized in place; the parameter is read after its update}}
func.func @read_after_update(%w: tensor<4xf32>, %g: tensor<4xf32>)
    -> (tensor<4xf32> {train.role = #train<role updated_param>, train.param = 0}, tensor<4xf32>)
    attributes {train.step} {
  %u = train.sgd_update %w, %g {learning_rate = 0.1 : f64} : tensor<4xf32>
  %r = train.relu %w : tensor<4xf32>
  return %u, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// The same for optimizer state: a momentum buffer read after its update.
// expected-error @+1 {{result 0 (an updated optimizer state) was not bufferized in place; the state is read after its update}}
func.func @state_read_after_update(%b: tensor<4xf32>, %g: tensor<4xf32>,
                                   %w: tensor<4xf32>, %t: tensor<i64>)
    -> (tensor<4xf32> {train.role = #train<role updated_state>, train.param = 0}, tensor<4xf32>)
    attributes {train.step} {
  %b1 = train.momentum_update %b, %g, %w, %t {momentum = 0.9 : f64} : tensor<4xf32>
  %r = train.relu %b : tensor<4xf32>
  return %b1, %r : tensor<4xf32>, tensor<4xf32>
}
