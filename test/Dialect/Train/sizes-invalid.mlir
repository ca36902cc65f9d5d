// RUN: remat-opt %s --split-input-file --verify-diagnostics

// Sizes past 2^53 bytes (so past 64 bits, too) are verifier errors naming
// the value (sizes-flops.mlir: FLOP counts), so no size wraps to a negative
// number in a remark, a graph or a manifest.

func.func @op_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op result #0 ('tensor<3000000000x3000000000xf32>') is larger than 2^53 bytes, the largest tensor the train dialect takes}}
  %0 = train.broadcast %x {dims = array<i64: 1>, scale = 1.0 : f64} : tensor<4xf32> -> tensor<3000000000x3000000000xf32>
  return
}

// -----

func.func @op_operand(%x: tensor<3000000000x3000000000xf32>) {
  // expected-error @+1 {{'train.relu' op operand #0 ('tensor<3000000000x3000000000xf32>') is larger than 2^53 bytes}}
  %0 = train.relu %x : tensor<3000000000x3000000000xf32>
  return
}

// -----

// expected-error @+1 {{argument 0 ('tensor<3000000000x3000000000xf32>') is larger than 2^53 bytes, the largest tensor the train dialect takes}}
func.func @argument(%w: tensor<3000000000x3000000000xf32> {train.role = #train<role param>}) {
  return
}

// -----

// Just under the bound: 2^53 bytes of f16.
func.func @largest(%x: tensor<4503599627370496xf16>) -> tensor<4503599627370496xf16> {
  %0 = train.relu %x : tensor<4503599627370496xf16>
  return %0 : tensor<4503599627370496xf16>
}

// -----

// expected-error @+1 {{argument 0 ('tensor<0x2xf32>') has a zero-sized dimension}}
func.func @empty_argument(%w: tensor<0x2xf32> {train.role = #train<role param>}) {
  return
}

// -----

func.func @empty_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op result #0 ('tensor<4x0xf32>') has a zero-sized dimension}}
  %0 = train.broadcast %x {dims = array<i64: 1>, scale = 1.0 : f64} : tensor<4xf32> -> tensor<4x0xf32>
  return
}
