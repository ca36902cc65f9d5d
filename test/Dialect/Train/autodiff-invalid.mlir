// RUN: remat-opt %s --split-input-file --train-autodiff --verify-diagnostics

// Tests train-autodiff's diagnostics on models it cannot differentiate.

// expected-error @+1 {{a model must return exactly one value, its scalar loss; this one returns 0}}
func.func @no_loss(%w: tensor<4xf32> {train.role = #train<role param>}) {
  return
}

// -----

// expected-error @+1 {{a model must return a scalar loss (a rank-0 float tensor), got 'tensor<4xf32>'}}
func.func @vector_loss(%w: tensor<4xf32> {train.role = #train<role param>}) -> tensor<4xf32> {
  %r = train.relu %w : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{a model must return exactly one value, its scalar loss; this one returns 2}}
func.func @two_results(%w: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> (tensor<f32>, tensor<f32>) {
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l, %l : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{argument 1 has no 'train.role' (#train<role param>, input or label)}}
func.func @missing_role(%w: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32>) -> tensor<f32> {
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{parameter 1 is not used by the model}}
func.func @unused_param(%w: tensor<4xf32> {train.role = #train<role param>}, %v: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{parameter 1 does not affect the loss}}
func.func @dead_param(%w: tensor<4xf32> {train.role = #train<role param>}, %v: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %dead = train.relu %v : tensor<4xf32>
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @second_order(%w: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  // expected-error @+1 {{'train.relu_grad' op is not differentiable (higher-order gradients are not supported)}}
  %g = train.relu_grad %w, %w : tensor<4xf32>
  %l = train.mse_loss %g, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @foreign_op(%w: tensor<4xf32> {train.role = #train<role param>}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  // expected-error @+1 {{'math.exp' op cannot be differentiated: it does not implement AutodiffOpInterface}}
  %e = math.exp %w : tensor<4xf32>
  %l = train.mse_loss %e, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{parameter 1 ('fc.bias') does not affect the loss}}
func.func @dead_named(%w: tensor<4xf32> {train.role = #train<role param>}, %v: tensor<4xf32> {train.role = #train<role param>, train.name = "fc.bias"}, %y: tensor<4xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %dead = train.relu %v : tensor<4xf32>
  %l = train.mse_loss %w, %y : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
