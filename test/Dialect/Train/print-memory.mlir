// RUN: remat-opt %s --split-input-file --train-print-memory --verify-diagnostics

// Tests the memory report on functions small enough to check by hand.

// Arguments 16 bytes; r1 allocated with a live: 32; r2 with r1 live: 48
// (the peak); then r1 is freed and the loss allocated: 16 + 16 + 4 = 36.
// expected-remark @+2 {{peak 48 bytes, fixed 16 bytes (parameters 0, inputs and labels 16), compute 20 FLOPs}}
// expected-remark @+1 {{live at peak: argument 0, 16 bytes}}
func.func @chain(%a: tensor<4xf32> {train.role = #train<role input>}) -> tensor<f32> {
  // expected-remark @+1 {{live at peak: 16 bytes}}
  %r1 = train.relu %a : tensor<4xf32>
  // expected-remark @+2 {{peak reached here}}
  // expected-remark @+1 {{live at peak: 16 bytes}}
  %r2 = train.relu %r1 : tensor<4xf32>
  %l = train.mse_loss %r2, %a : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An in-place parameter update allocates nothing: the peak is the gradient
// next to the parameter (64 + 64), not three buffers.
// expected-remark @+2 {{peak 128 bytes, fixed 64 bytes (parameters 64, inputs and labels 0), compute 48 FLOPs}}
// expected-remark @+1 {{live at peak: argument 0, 64 bytes}}
func.func @update(%w: tensor<16xf32> {train.role = #train<role param>})
    -> (tensor<16xf32> {train.role = #train<role updated_param>, train.param = 0}) attributes {train.step} {
  // expected-remark @+2 {{peak reached here}}
  // expected-remark @+1 {{live at peak: 64 bytes}}
  %g = train.relu %w : tensor<16xf32>
  %u = train.sgd_update %w, %g {learning_rate = 0.1 : f64} : tensor<16xf32>
  return %u : tensor<16xf32>
}
