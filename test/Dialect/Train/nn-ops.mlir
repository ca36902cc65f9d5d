// RUN: remat-opt %s | remat-opt | FileCheck %s
// RUN: remat-opt %s --mlir-print-op-generic | remat-opt | FileCheck %s
// RUN: remat-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD

// Tests that the ops of CNNs and transformers round-trip, in the short type
// form where all types agree and with their default attributes elided.

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<2x4x6x6xf32>, %w: tensor<8x2x3x3xf32>, %c: tensor<8x1x1xf32>,
              %v: tensor<4xf32>, %t: tensor<2x8x16xf32>, %g: tensor<16xf32>,
              %ids: tensor<2x8xi64>, %tab: tensor<50x16xf32>, %seed: tensor<i64>,
              %off: tensor<i64>, %logits: tensor<16x50xf32>, %labels: tensor<16xi32>,
              %l: tensor<f32>) {
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.add %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %0 = train.add %t, %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.sub %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %1 = train.sub %t, %g : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.mul %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %2 = train.mul %t, %g : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.div %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %3 = train.div %t, %g : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.div_rhs_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
  %4 = train.div_rhs_grad %t, %t, %g : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.sum_to %{{[a-z0-9]+}} : tensor<2x8x16xf32> -> tensor<1x16xf32>
  %5 = train.sum_to %t : tensor<2x8x16xf32> -> tensor<1x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.sum %{{[a-z0-9]+}} {dims = array<i64: 0, 1>} : tensor<2x8x16xf32> -> tensor<16xf32>
  %6 = train.sum %t {dims = array<i64: 0, 1>} : tensor<2x8x16xf32> -> tensor<16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.mean %{{[a-z0-9]+}} {dims = array<i64: 2>} : tensor<2x8x16xf32> -> tensor<2x8xf32>
  %7 = train.mean %t {dims = array<i64: 2>} : tensor<2x8x16xf32> -> tensor<2x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.broadcast %{{[a-z0-9]+}} {dims = array<i64: 0, 1>, scale = 5.000000e-01 : f64} : tensor<16xf32> -> tensor<2x8x16xf32>
  %8 = train.broadcast %6 {dims = array<i64: 0, 1>, scale = 5.000000e-01 : f64} : tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.clamp %{{[a-z0-9]+}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x8x16xf32>
  %c6 = train.clamp %t {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.clamp_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x8x16xf32>
  %c6g = train.clamp_grad %t, %c6 {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.tanh %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %9 = train.tanh %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.tanh_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %10 = train.tanh_grad %t, %9 : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.sigmoid %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %11 = train.sigmoid %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.sigmoid_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %12 = train.sigmoid_grad %t, %11 : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.gelu %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %13 = train.gelu %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.gelu_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %14 = train.gelu_grad %t, %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.reshape %{{[a-z0-9]+}} : tensor<2x8x16xf32> -> tensor<16x16xf32>
  %15 = train.reshape %t : tensor<2x8x16xf32> -> tensor<16x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.transpose %{{[a-z0-9]+}} {permutation = array<i64: 0, 2, 1>} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %16 = train.transpose %t {permutation = array<i64: 0, 2, 1>} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.batch_matmul %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {transpose_rhs} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x8xf32>
  %17 = train.batch_matmul %t, %t {transpose_rhs} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.causal_mask %{{[a-z0-9]+}} : tensor<2x8x8xf32>
  %18 = train.causal_mask %17 : tensor<2x8x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.causal_mask_grad %{{[a-z0-9]+}} : tensor<2x8x8xf32>
  %19 = train.causal_mask_grad %17 : tensor<2x8x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.softmax %{{[a-z0-9]+}} : tensor<2x8x8xf32>
  %20 = train.softmax %18 : tensor<2x8x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.softmax_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x8xf32>
  %21 = train.softmax_grad %17, %20 : tensor<2x8x8xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.log_softmax %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %22 = train.log_softmax %t : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.log_softmax_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>
  %23 = train.log_softmax_grad %t, %22 : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.layer_norm %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x8x16xf32>, tensor<16xf32>
  %24 = train.layer_norm %t, %g, %g {epsilon = 1.000000e-06 : f64} : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.layer_norm_grad_input %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<16xf32>
  %25 = train.layer_norm_grad_input %t, %t, %g : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.layer_norm_grad_weight %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32> -> tensor<16xf32>
  %26 = train.layer_norm_grad_weight %t, %t : tensor<2x8x16xf32> -> tensor<16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.batch_norm %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x4x6x6xf32>, tensor<4xf32>
  %27 = train.batch_norm %x, %v, %v : tensor<2x4x6x6xf32>, tensor<4xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.batch_norm_grad_input %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x4x6x6xf32>, tensor<4xf32>
  %28 = train.batch_norm_grad_input %x, %x, %v : tensor<2x4x6x6xf32>, tensor<4xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.batch_norm_grad_weight %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x4x6x6xf32> -> tensor<4xf32>
  %29 = train.batch_norm_grad_weight %x, %x : tensor<2x4x6x6xf32> -> tensor<4xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.cross_entropy %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<16x50xf32>, tensor<16xi32> -> tensor<f32>
  %30 = train.cross_entropy %logits, %labels : tensor<16x50xf32>, tensor<16xi32> -> tensor<f32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.cross_entropy_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<16x50xf32>, tensor<16xi32>, tensor<f32>
  %31 = train.cross_entropy_grad %logits, %labels, %l : tensor<16x50xf32>, tensor<16xi32>, tensor<f32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.embedding %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<50x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %32 = train.embedding %tab, %ids : tensor<50x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.embedding_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<50x16xf32>
  %33 = train.embedding_grad %32, %ids : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<50x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.dropout %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {probability = 1.000000e-01 : f64} : tensor<2x8x16xf32>
  %34 = train.dropout %t, %seed, %off {probability = 1.000000e-01 : f64} : tensor<2x8x16xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.conv2d %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {groups = 2 : i64, padding = array<i64: 1, 1>} : tensor<2x4x6x6xf32>, tensor<8x2x3x3xf32> -> tensor<2x8x6x6xf32>
  %35 = train.conv2d %x, %w {groups = 2 : i64, padding = array<i64: 1, 1>} : tensor<2x4x6x6xf32>, tensor<8x2x3x3xf32> -> tensor<2x8x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.conv2d_grad_input %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x8x6x6xf32>, tensor<8x2x3x3xf32> -> tensor<2x4x6x6xf32>
  %36 = train.conv2d_grad_input %35, %w {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x8x6x6xf32>, tensor<8x2x3x3xf32> -> tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.conv2d_grad_weight %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x8x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<8x2x3x3xf32>
  %37 = train.conv2d_grad_weight %35, %x {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x8x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<8x2x3x3xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.add %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : tensor<2x8x6x6xf32>, tensor<8x1x1xf32> -> tensor<2x8x6x6xf32>
  %38 = train.add %35, %c : tensor<2x8x6x6xf32>, tensor<8x1x1xf32> -> tensor<2x8x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.max_pool2d %{{[a-z0-9]+}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  %39 = train.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.max_pool2d_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>
  %40 = train.max_pool2d_grad %39, %x {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.avg_pool2d %{{[a-z0-9]+}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  %41 = train.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.avg_pool2d_grad %{{[a-z0-9]+}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  %42 = train.avg_pool2d_grad %41 {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.upsample_nearest2d %{{[a-z0-9]+}} {scale = 2 : i64} : tensor<2x4x3x3xf32> -> tensor<2x4x6x6xf32>
  %43 = train.upsample_nearest2d %39 {scale = 2 : i64} : tensor<2x4x3x3xf32> -> tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.upsample_nearest2d_grad %{{[a-z0-9]+}} {scale = 2 : i64} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  %44 = train.upsample_nearest2d_grad %43 {scale = 2 : i64} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.concat %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {axis = 1 : i64} : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<2x8x6x6xf32>
  %45 = train.concat %x, %43 {axis = 1 : i64} : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<2x8x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.slice %{{[a-z0-9]+}} {offsets = array<i64: 0, 4, 0, 0>} : tensor<2x8x6x6xf32> -> tensor<2x4x6x6xf32>
  %46 = train.slice %45 {offsets = array<i64: 0, 4, 0, 0>} : tensor<2x8x6x6xf32> -> tensor<2x4x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.slice_grad %{{[a-z0-9]+}} {offsets = array<i64: 0, 4, 0, 0>} : tensor<2x4x6x6xf32> -> tensor<2x8x6x6xf32>
  %47 = train.slice_grad %46 {offsets = array<i64: 0, 4, 0, 0>} : tensor<2x4x6x6xf32> -> tensor<2x8x6x6xf32>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.cast %{{[a-z0-9]+}} : tensor<2x8x16xf32> -> tensor<2x8x16xbf16>
  %48 = train.cast %t : tensor<2x8x16xf32> -> tensor<2x8x16xbf16>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.gelu %{{[a-z0-9]+}} : tensor<2x8x16xbf16>
  %49 = train.gelu %48 : tensor<2x8x16xbf16>
  // CHECK-NEXT: %{{[a-z0-9]+}} = train.cast %{{[a-z0-9]+}} : tensor<2x8x16xbf16> -> tensor<2x8x16xf16>
  %50 = train.cast %49 : tensor<2x8x16xbf16> -> tensor<2x8x16xf16>
  return
}

// A cast to the operand's own type round-trips, and folds away.
// CHECK-LABEL: func.func @identity_cast
// CHECK-NEXT: train.cast %{{.+}} : tensor<4xf16> -> tensor<4xf16>
// FOLD-LABEL: func.func @identity_cast
// FOLD-NEXT: return %arg0 : tensor<4xf16>
func.func @identity_cast(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
