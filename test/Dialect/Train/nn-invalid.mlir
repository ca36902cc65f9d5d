// RUN: remat-opt %s --split-input-file --verify-diagnostics

// Tests the verifiers of the CNN and transformer ops: every error they
// can emit has a case here.
func.func @broadcast_shapes(%a: tensor<3x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes 3x4 and 3 are not broadcastable}}
  %0 = train.add %a, %b : tensor<3x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @broadcast_result(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result shape must be 3x4, got 4x4}}
  %0 = train.mul %a, %b : tensor<3x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_element_type(%a: tensor<3x4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{operands and results must have one element type, got 'f32' and 'f64'}}
  %0 = train.sub %a, %b : tensor<3x4xf32>, tensor<4xf64> -> tensor<3x4xf32>
  return
}

// -----

func.func @f8_unsupported(%a: tensor<3x4xf8E4M3FN>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = train.tanh %a : tensor<3x4xf8E4M3FN>
  return
}

// -----

func.func @implicit_mixed_precision(%a: tensor<3x4xf32>, %b: tensor<3x4xbf16>) {
  // expected-error @+1 {{'train.add' op operands and results must have one element type, got 'f32' and 'bf16'}}
  %0 = train.add %a, %b : tensor<3x4xf32>, tensor<3x4xbf16> -> tensor<3x4xf32>
  return
}

// -----

func.func @cast_reshapes(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'train.cast' op changes the shape; a cast converts the element type only}}
  %0 = train.cast %a : tensor<3x4xf32> -> tensor<12xbf16>
  return
}

// -----

func.func @cast_integer(%a: tensor<3x4xi32>) {
  // expected-error @+1 {{'train.cast' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = train.cast %a : tensor<3x4xi32> -> tensor<3x4xf32>
  return
}

// -----

func.func @div_rhs_grad(%g: tensor<3x4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operands must broadcast to the gradient's shape 3x4}}
  %0 = train.div_rhs_grad %g, %g, %b : tensor<3x4xf32>, tensor<3x4xf32>, tensor<5xf32>
  return
}

// -----

func.func @sum_to(%g: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape 2x4 does not broadcast to the operand shape 3x4}}
  %0 = train.sum_to %g : tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @sum_dim_range(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{dimension 2 out of range for rank 2}}
  %0 = train.sum %x {dims = array<i64: 2>} : tensor<3x4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @mean_dims_sorted(%x: tensor<3x4x5xf32>) {
  // expected-error @+1 {{dims must be sorted and distinct}}
  %0 = train.mean %x {dims = array<i64: 2, 0>} : tensor<3x4x5xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sum_result(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape must be 4, got 3}}
  %0 = train.sum %x {dims = array<i64: 0>} : tensor<3x4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @broadcast_operand(%x: tensor<3xf32>) {
  // expected-error @+1 {{operand shape must be 4, got 3}}
  %0 = train.broadcast %x {dims = array<i64: 0>} : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reshape(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{cannot reshape 12 elements into 10}}
  %0 = train.reshape %x : tensor<3x4xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @transpose_size(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = train.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @transpose_repeat(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{permutation must hold each dimension once}}
  %0 = train.transpose %x {permutation = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{result shape must be 4x3, got 3x4}}
  %0 = train.transpose %x {permutation = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @bmm_rank(%a: tensor<3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+1 {{expects rank-3 operands and result}}
  %0 = train.batch_matmul %a, %b : tensor<3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @bmm_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{batch sizes differ: 2 vs 3}}
  %0 = train.batch_matmul %a, %b : tensor<2x3x4xf32>, tensor<3x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @bmm_contraction(%a: tensor<2x3x4xf32>, %b: tensor<2x5x5xf32>) {
  // expected-error @+1 {{contraction dimensions differ: 4 (lhs) vs 5 (rhs)}}
  %0 = train.batch_matmul %a, %b : tensor<2x3x4xf32>, tensor<2x5x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @causal_mask(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expects square trailing dimensions [..., T, T], got 'tensor<2x3x4xf32>'}}
  %0 = train.causal_mask %x : tensor<2x3x4xf32>
  return
}

// -----

func.func @layer_norm_rank(%x: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expects an input of rank 1 or more}}
  %0 = train.layer_norm %x, %w, %w : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @layer_norm_channels(%x: tensor<3x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight size 4 differs from the normalized channels 8}}
  %0 = train.layer_norm %x, %w, %w : tensor<3x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects an input of rank 2 or more (N, C, ...), got 'tensor<8xf32>'}}
  %0 = train.batch_norm %x, %w, %w : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_weight_rank(%x: tensor<2x3x4x4xf32>, %w: tensor<3x1xf32>) {
  // expected-error @+1 {{expects a rank-1 weight, got 'tensor<3x1xf32>'}}
  %0 = train.batch_norm %x, %w, %w : tensor<2x3x4x4xf32>, tensor<3x1xf32>
  return
}

// -----

func.func @norm_grad_weight(%x: tensor<2x3x4x4xf32>) {
  // expected-error @+1 {{result size 4 differs from the normalized channels 3}}
  %0 = train.batch_norm_grad_weight %x, %x : tensor<2x3x4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @cross_entropy_rows(%x: tensor<6x5xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{has 4 labels for 6 rows of logits}}
  %0 = train.cross_entropy %x, %y : tensor<6x5xf32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_rank(%x: tensor<2x6x5xf32>, %y: tensor<6xi64>) {
  // expected-error @+1 {{expects a rank-2 logits tensor [N, C], got 'tensor<2x6x5xf32>'}}
  %0 = train.cross_entropy %x, %y : tensor<2x6x5xf32>, tensor<6xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%x: tensor<6x5xf32>, %y: tensor<6xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = train.cross_entropy %x, %y : tensor<6x5xf32>, tensor<6xf32> -> tensor<f32>
  return
}

// -----

func.func @embedding_shape(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{gathered rows' shape must be 3x4, got 3x5}}
  %0 = train.embedding %t, %i : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x5xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<10xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{expects a rank-2 table [V, D], got 'tensor<10xf32>'}}
  %0 = train.embedding %t, %i : tensor<10xf32>, tensor<3xi64> -> tensor<3x5xf32>
  return
}

// -----

func.func @dropout_probability(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{probability must be in [0, 1), got 1}}
  %0 = train.dropout %x, %s, %s {probability = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_seed_type(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = "train.dropout"(%x, %s, %s) {probability = 0.5 : f64} : (tensor<4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @conv_strides(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{strides and dilation must be positive and padding non-negative}}
  %0 = train.conv2d %x, %w {strides = array<i64: 0, 1>} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{groups (2) must divide the input channels (4) and the filters (3)}}
  %0 = train.conv2d %x, %w {groups = 2} : tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x5x5xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{weight has 2 channels per group, the input 3}}
  %0 = train.conv2d %x, %w : tensor<1x3x5x5xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @conv_kernel(%x: tensor<1x2x2x2xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{kernel (extent 3) larger than the padded input (2)}}
  %0 = train.conv2d %x, %w : tensor<1x2x2x2xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @conv_output(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{output shape must be 1x3x5x5, got 1x3x3x3}}
  %0 = train.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<2x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{expects a rank-4 input [N, C, H, W], got 'tensor<2x5x5xf32>'}}
  %0 = train.conv2d %x, %w : tensor<2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @conv_pair(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{attribute 'padding' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements}}
  %0 = train.conv2d %x, %w {padding = array<i64: 1>} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{kernel and strides must be positive}}
  %0 = train.max_pool2d %x {kernel = array<i64: 0, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x4x3xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{padding must be between 0 and half the kernel, got 2 for kernel 2}}
  %0 = train.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x7x7xf32>
  return
}

// -----

func.func @pool_large(%x: tensor<1x2x2x2xf32>) {
  // expected-error @+1 {{kernel 3 larger than the padded input}}
  %0 = train.max_pool2d %x {kernel = array<i64: 3, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x1x1xf32>
  return
}

// -----

func.func @pool_output(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{output shape must be 1x2x2x2, got 1x2x3x3}}
  %0 = train.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @upsample_scale(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{scale must be positive, got 0}}
  %0 = train.upsample_nearest2d %x {scale = 0} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @upsample_shape(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{upsampled shape must be 1x2x8x8, got 1x2x8x4}}
  %0 = train.upsample_nearest2d %x {scale = 2} : tensor<1x2x4x4xf32> -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{expects at least one input}}
  %0 = "train.concat"() {axis = 0} : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = train.concat %a {axis = 2} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{input shape must be 2x3, got 3x3}}
  %0 = train.concat %a, %b {axis = 1} : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_total(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{inputs add up to 5 along axis 1, the result has 6}}
  %0 = train.concat %a, %b {axis = 1} : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{offsets, operand and result must have one rank}}
  %0 = train.slice %x {offsets = array<i64: 0>} : tensor<4x6xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{block of size 3 at offset 4 exceeds dimension 1 of size 6}}
  %0 = train.slice %x {offsets = array<i64: 0, 4>} : tensor<4x6xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_grad_bounds(%g: tensor<2x3xf32>) {
  // expected-error @+1 {{block of size 2 at offset 3 exceeds dimension 0 of size 4}}
  %0 = train.slice_grad %g {offsets = array<i64: 3, 0>} : tensor<2x3xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @dropout_without_seed(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected ','}}
  %0 = train.dropout %x {probability = 0.5 : f64} : tensor<4xf32>
  return
}

// -----

func.func @clamp_empty_range(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'train.clamp' op needs min < max, got [6.000000e+00, 0.000000e+00]}}
  %0 = train.clamp %a {min = 6.0 : f64, max = 0.0 : f64} : tensor<3x4xf32>
  return
}

// -----

func.func @conv_negative_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op groups must be at least 1, got -1}}
  %0 = train.conv2d %x, %w {groups = -1} : tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @div_not_broadcastable(%a: tensor<3x4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'train.div' op operand shapes 3x4 and 5 are not broadcastable}}
  %0 = train.div %a, %b : tensor<3x4xf32>, tensor<5xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @sigmoid_integer(%a: tensor<3x4xi32>) {
  // expected-error @+1 {{'train.sigmoid' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<3x4xi32>'}}
  %0 = train.sigmoid %a : tensor<3x4xi32>
  return
}

// -----

func.func @gelu_changes_shape(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'train.gelu' op requires the same type for all operands and results}}
  %0 = "train.gelu"(%a) : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @softmax_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{'train.softmax' op works along the last dimension and needs a tensor of rank 1 or more}}
  %0 = train.softmax %a : tensor<f32>
  return
}

// -----

func.func @log_softmax_changes_type(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'train.log_softmax' op requires the same type for all operands and results}}
  %0 = "train.log_softmax"(%a) : (tensor<3x4xf32>) -> tensor<3x4xf16>
  return
}

// -----

func.func @log_softmax_scalar(%a: tensor<f64>) {
  // expected-error @+1 {{'train.log_softmax' op works along the last dimension and needs a tensor of rank 1 or more}}
  %0 = train.log_softmax %a : tensor<f64>
  return
}
