// RUN: remat-opt %s --split-input-file --verify-diagnostics

// Tests train.unary's verifier and attribute parser: each error has a case.
func.func @needs_alpha(%x: tensor<4xf32>) {
  // expected-error @+1 {{kind 'pow' needs an 'alpha' attribute}}
  %0 = train.unary %x {kind = #train<unary pow>} : tensor<4xf32>
  return
}

// -----

func.func @no_alpha(%x: tensor<4xf32>) {
  // expected-error @+1 {{kind 'exp' takes no 'alpha' attribute}}
  %0 = train.unary %x {kind = #train<unary exp>, alpha = 2.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @grad_needs_alpha(%x: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{kind 'elu' needs an 'alpha' attribute}}
  %0 = train.unary_grad %g, %x {kind = #train<unary elu>} : tensor<4xf32>
  return
}

// -----

func.func @unknown_kind(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::remat::train::UnaryKind to be one of: exp, log}}
  // expected-error @+1 {{failed to parse Train_UnaryKindAttr parameter 'value'}}
  %0 = train.unary %x {kind = #train<unary swish>} : tensor<4xf32>
  return
}

// -----

func.func @types(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "train.unary"(%x) {kind = #train<unary exp>} : (tensor<4xf32>) -> tensor<4xf64>
  return
}
