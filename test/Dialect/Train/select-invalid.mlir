// RUN: remat-opt %s --split-input-file --verify-diagnostics

// Tests the verifiers of the comparison, selection and extremum ops: each
// error has a case.
func.func @compare_types(%a: tensor<4xi64>, %b: tensor<4xi32>) {
  // expected-error @+1 {{operands must have one element type, got 'i64' and 'i32'}}
  %0 = train.compare %a, %b {predicate = #train<cmp eq>} : tensor<4xi64>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @compare_shapes(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand shape 3 does not broadcast with 4}}
  %0 = train.compare %a, %b {predicate = #train<cmp lt>} : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @compare_result(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{result shape must be 4x3, got 4}}
  %0 = train.compare %a, %b {predicate = #train<cmp lt>} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @compare_predicate(%a: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::remat::train::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Train_ComparePredicateAttr parameter 'value'}}
  %0 = train.compare %a, %a {predicate = #train<cmp bigger>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @compare_int_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = train.compare %a, %a {predicate = #train<cmp eq>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xi64>
  return
}

// -----

func.func @where_shapes(%c: tensor<4xf32>, %a: tensor<2x4xf32>, %b: tensor<3x1xf32>) {
  // expected-error @+1 {{operand shape 3x1 does not broadcast with 2x4}}
  %0 = train.where %c, %a, %b : tensor<4xf32>, tensor<2x4xf32>, tensor<3x1xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @where_types(%c: tensor<4xf32>, %a: tensor<4xf64>) {
  // expected-error @+1 {{operands and results must have one element type, got 'f32' and 'f64'}}
  %0 = train.where %c, %a, %a : tensor<4xf32>, tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  return
}

// -----

func.func @maximum_shapes(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes 4 and 3 are not broadcastable}}
  %0 = train.maximum %a, %b : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @extremum_grad_shapes(%g: tensor<4xf32>, %a: tensor<8xf32>) {
  // expected-error @+1 {{operands must broadcast to the gradient's shape 4}}
  %0 = train.extremum_grad %g, %a, %g : tensor<4xf32>, tensor<8xf32>, tensor<4xf32>
  return
}

// -----

func.func @amax_dims(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{dimension 2 out of range for rank 2}}
  %0 = train.amax %x {dims = array<i64: 2>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @amin_result(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result shape must be 4, got 3}}
  %0 = train.amin %x {dims = array<i64: 1>} : tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @stop_gradient_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "train.stop_gradient"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return
}
