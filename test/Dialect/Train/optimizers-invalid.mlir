// RUN: remat-opt %s --split-input-file --verify-diagnostics

func.func @lr_type(%w: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{lr must have the parameter's element type}}
  %0 = train.sgd_update %w, %w lr(%lr : tensor<f64>) : tensor<4xf32>
  return
}

// -----

func.func @nesterov_without_buffer(%w: tensor<4xf32>) {
  // expected-error @+1 {{nesterov needs a momentum buffer}}
  %0 = train.sgd_update %w, %w {learning_rate = 0.1 : f64, nesterov} : tensor<4xf32>
  return
}

// -----

func.func @buffer_type(%w: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{the momentum buffer must have the parameter's type}}
  %0 = train.sgd_update %w, %w buffer(%b : tensor<2x2xf32>) : tensor<4xf32>
  return
}

// -----

func.func @dampening(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{dampening must be in [0, 1], got 2}}
  %0 = train.momentum_update %w, %w, %w, %t {momentum = 0.9 : f64, dampening = 2.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @negative_momentum(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{momentum must be in [0, inf], got -0.5}}
  %0 = train.momentum_update %w, %w, %w, %t {momentum = -0.5 : f64} : tensor<4xf32>
  return
}

// -----

func.func @beta(%w: tensor<4xf32>) {
  // expected-error @+1 {{beta must be in [0, 1), got 1}}
  %0 = train.adam_moment %w, %w, %w {beta = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @eps(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{eps must be in [0, inf], got -1}}
  %0 = train.adam_update %w, %w, %w, %t {learning_rate = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @decay(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{weight_decay must be in [0, inf], got -0.1}}
  %0 = train.adam_update %w, %w, %w, %t {learning_rate = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = -0.1 : f64} : tensor<4xf32>
  return
}
