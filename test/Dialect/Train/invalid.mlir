// RUN: remat-opt %s --split-input-file --verify-diagnostics

// Tests the verifiers of the train ops and attributes: every error they can
// emit has a case here.

func.func @matmul_contraction(%a: tensor<8x4xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{contraction dimensions differ: 4 (lhs) vs 3 (rhs)}}
  %0 = train.matmul %a, %b : tensor<8x4xf32>, tensor<3x2xf32> -> tensor<8x2xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{result shape must be 8x2, got 'tensor<8x3xf32>'}}
  %0 = train.matmul %a, %b : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x3xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{expects rank-2 operands and result}}
  %0 = train.matmul %a, %b : tensor<8xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  return
}

// -----

func.func @element_types(%a: tensor<8x4xf32>, %b: tensor<4x2xf64>) {
  // expected-error @+1 {{operands and results must have one element type, got 'f32' and 'f64'}}
  %0 = train.matmul %a, %b : tensor<8x4xf32>, tensor<4x2xf64> -> tensor<8x2xf32>
  return
}

// -----

func.func @integer_tensor(%a: tensor<8x4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = train.relu %a : tensor<8x4xi32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = train.relu %a : tensor<?x4xf32>
  return
}

// -----

func.func @bias_size(%a: tensor<8x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias size 3 differs from the input's last dimension 4}}
  %0 = train.bias_add %a, %b : tensor<8x4xf32>, tensor<3xf32>
  return
}

// -----

func.func @bias_rank(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expects a rank-2 input and a rank-1 bias}}
  %0 = train.bias_add %a, %b : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @bias_grad_size(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{result size 3 differs from the operand's last dimension 4}}
  %0 = train.bias_grad %a : tensor<8x4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @bias_grad_rank(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{expects a rank-2 operand and a rank-1 result}}
  %0 = train.bias_grad %a : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @mse_mismatch(%a: tensor<8x4xf32>, %b: tensor<8x3xf32>) {
  // expected-error @+1 {{all of {prediction, target} have same type}}
  %0 = "train.mse_loss"(%a, %b) : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_not_scalar(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = "train.mse_loss"(%a, %a) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @mse_grad_elements(%a: tensor<8x4xf32>, %l: tensor<f64>) {
  // expected-error @+1 {{operands and results must have one element type, got 'f32' and 'f64'}}
  %0 = train.mse_loss_grad %a, %a, %l : tensor<8x4xf32>, tensor<f64>
  return
}

// -----

func.func @sgd_rate(%w: tensor<4xf32>) {
  // expected-error @+1 {{learning rate must be in [0, inf], got -1}}
  %0 = train.sgd_update %w, %w {learning_rate = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @relu_types(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "train.relu"(%a) : (tensor<8x4xf32>) -> tensor<8x3xf32>
  return
}

// -----

// expected-error @+1 {{argument 0: 'train.role' must be #train<role param>, input, label, state, lr, step or grad, got "param"}}
func.func @string_role(%w: tensor<4xf32> {train.role = "param"}) {
  return
}

// -----

// expected-error @+1 {{argument 0: 'train.role' must be #train<role param>, input, label, state, lr, step or grad, got #train<role loss>}}
func.func @result_role_on_argument(%w: tensor<4xf32> {train.role = #train<role loss>}) {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::remat::train::Role to be one of: param, input, label, loss, updated_param, grad}}
// expected-error @+1 {{failed to parse Train_RoleAttr parameter 'value'}}
func.func @bad_role(%w: tensor<4xf32> {train.role = #train<role weights>}) {
  return
}

// -----

// expected-error @+1 {{argument 0: 'train.name' must be a string}}
func.func @bad_name(%w: tensor<4xf32> {train.name = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{unknown train argument attribute 'train.weight'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {train.weight}) {
  return
}

// -----

// expected-error @+1 {{result 0: 'train.role' must be #train<role loss>, updated_param, updated_state or grad, got #train<role input>}}
func.func @bad_result_role(%w: tensor<4xf32>) -> (tensor<4xf32> {train.role = #train<role input>}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0: 'train.param' must be a non-negative integer}}
func.func @bad_param_index(%w: tensor<4xf32>) -> (tensor<4xf32> {train.param = -1 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown train result attribute 'train.index'}}
func.func @unknown_result_attr(%w: tensor<4xf32>) -> (tensor<4xf32> {train.index = 1}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'train.step' must be a unit attribute on a function}}
func.func @bad_step() attributes {train.step = 1 : i64} {
  return
}

// -----

func.func @bad_recompute(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.recompute' must be an integer}}
  %0 = train.relu %a {train.recompute = "yes"} : tensor<4xf32>
  return
}

// -----

func.func @bad_no_recompute(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.no_recompute' must be a unit attribute on a train op}}
  %0 = train.relu %a {train.no_recompute = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'train.no_recompute' must be a unit attribute on a train op}}
func.func @no_recompute_on_func() attributes {train.no_recompute} {
  return
}

// -----

// expected-error @+1 {{unknown train attribute 'train.checkpoint'}}
func.func @unknown_attr() attributes {train.checkpoint} {
  return
}

// -----

func.func @malformed(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected ':'}}
  %0 = train.relu %a
  return
}
