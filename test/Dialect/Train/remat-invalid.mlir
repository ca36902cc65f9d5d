// RUN: remat-opt %s --split-input-file --train-autodiff --train-remat="memory-limit=600" --verify-diagnostics

// Tests train-remat's diagnostics on limits and functions it cannot meet or
// model. Option errors are in remat-options-invalid.mlir.

// The two-layer MLP peaks at 868 bytes without remat and at 804 at best
// with the default solver; 416 bytes are arguments. The figure named is one it then
// meets (the RUN line in remat.mlir's HONEST prefix). No schedule at all goes
// below 800: the 416 bytes of arguments plus an op that reads two 128-byte
// values into a 128-byte result (relu's gradient, for one).
// expected-error @+1 {{memory limit of 600 bytes cannot be met: the smallest peak the 'auto' solver reaches is 804 bytes (fixed part 416 bytes: parameters, inputs and labels); no schedule peaks below 800 bytes (the fixed part plus the op that needs most, with its operands)}}
func.func @mlp(%w0: tensor<4x4xf32> {train.role = #train<role param>, train.name = "w0"},
    %b0: tensor<4xf32> {train.role = #train<role param>, train.name = "b0"},
    %w1: tensor<4x4xf32> {train.role = #train<role param>, train.name = "w1"},
    %b1: tensor<4xf32> {train.role = #train<role param>, train.name = "b1"},
    %x: tensor<8x4xf32> {train.role = #train<role input>, train.name = "x"},
    %y: tensor<8x4xf32> {train.role = #train<role label>, train.name = "y"}) -> tensor<f32> {
  %m0 = train.matmul %x, %w0 : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %a0 = train.bias_add %m0, %b0 : tensor<8x4xf32>, tensor<4xf32>
  %h0 = train.relu %a0 : tensor<8x4xf32>
  %m1 = train.matmul %h0, %w1 : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %a1 = train.bias_add %m1, %b1 : tensor<8x4xf32>, tensor<4xf32>
  %loss = train.mse_loss %a1, %y : tensor<8x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @foreign_op(%w: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'math.exp' is not supported in a training function: it has no cost model (CostOpInterface)}}
  %e = math.exp %w : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// expected-error @+1 {{expects straight-line code: a single block}}
func.func @branches(%w: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %w : tensor<4xf32>
}

// -----

func.func @regions(%w: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant true
  // expected-error @+1 {{expects straight-line code: ops with regions are not supported in a training function}}
  %r = scf.if %c -> tensor<4xf32> {
    scf.yield %w : tensor<4xf32>
  } else {
    scf.yield %w : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 1 must be a statically shaped tensor}}
func.func @scalar_argument(%w: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// A parameter read after its in-place update cannot be lowered in place.
// expected-error @+1 {{the function cannot run as written: event 1: 'train.relu' (3) reads 'arg0' after it was overwritten in place}}
func.func @read_after_update(%w: tensor<4xf32>, %g: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) attributes {train.step} {
  %u = train.sgd_update %w, %g {learning_rate = 0.1 : f64} : tensor<4xf32>
  %r = train.relu %w : tensor<4xf32>
  return %u, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func private @side_effect()

func.func @no_result(%w: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects ops with one result in a training function}}
  func.call @side_effect() : () -> ()
  return %w : tensor<4xf32>
}
