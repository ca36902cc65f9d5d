// RUN: remat-opt %s --split-input-file --train-profile-ops --verify-diagnostics | FileCheck %s

// Each priced op of a step sits between the runtime's timers; ops that
// share kind, location and types (a recomputed op and its original) share
// an id, so their times add up under one key. Functions that are not steps
// are left alone.

// CHECK-LABEL: module attributes {remat.profile_ops = [
// CHECK-SAME: {loc = "20:9", op = "train.relu", types = "f32[4] -> f32[4]"},
// CHECK-SAME: {loc = "21:9", op = "train.mse_loss", types = "f32[4], f32[4] -> f32[]"}]}
// CHECK: func.func private @remat_rt_profile_begin(i32)
// CHECK: func.func private @remat_rt_profile_end(i32)
// CHECK-LABEL: func.func @step
// CHECK: %[[R:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @remat_rt_profile_begin(%[[R]])
// CHECK-NEXT: train.relu
// CHECK-NEXT: call @remat_rt_profile_end(%[[R]])
// CHECK: %[[AGAIN:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @remat_rt_profile_begin(%[[AGAIN]])
// CHECK: %[[L:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @remat_rt_profile_begin(%[[L]])
// CHECK-NEXT: train.mse_loss
// CHECK-NEXT: call @remat_rt_profile_end(%[[L]])
// CHECK-LABEL: func.func @model
// CHECK-NOT: call
// CHECK: return
func.func @step(%a: tensor<4xf32> {train.role = #train<role input>}) -> tensor<f32> attributes {train.step} {
  %r = train.relu %a : tensor<4xf32> loc("model.mlir":20:9)
  %again = train.relu %a : tensor<4xf32> loc("copy.mlir":20:9)
  %l = train.mse_loss %r, %again : tensor<4xf32> -> tensor<f32> loc("model.mlir":21:9)
  return %l : tensor<f32>
}
func.func @model(%a: tensor<4xf32> {train.role = #train<role input>}) -> tensor<4xf32> {
  %r = train.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Named locations key by their name.
// CHECK: remat.profile_ops = [{loc = "layer1.relu", op = "train.relu", types = "f32[2,3] -> f32[2,3]"}]
func.func @named(%a: tensor<2x3xf32> {train.role = #train<role input>}) -> tensor<2x3xf32> attributes {train.step} {
  %r = train.relu %a : tensor<2x3xf32> loc("layer1.relu")
  return %r : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{the module is instrumented already (it has 'remat.profile_ops')}}
module attributes {remat.profile_ops = []} {
}

// -----

// expected-error @+1 {{symbol 'remat_rt_profile_begin' is the runtime's}}
module {
  func.func private @remat_rt_profile_begin(i64)
}
