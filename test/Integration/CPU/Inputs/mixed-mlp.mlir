// A two-layer classifier trained in mixed precision, autocast style:
// parameters and the loss in f32, matmuls, bias and GELU in bf16, the layer
// norm in f32, every change of type an explicit train.cast.
func.func @mixed(%w0: tensor<16x64xf32> {train.role = #train<role param>, train.name = "w0"},
    %b0: tensor<64xf32> {train.role = #train<role param>, train.name = "b0"},
    %g: tensor<64xf32> {train.role = #train<role param>, train.name = "ln.g"},
    %beta: tensor<64xf32> {train.role = #train<role param>, train.name = "ln.b"},
    %w1: tensor<64x10xf32> {train.role = #train<role param>, train.name = "w1"},
    %x: tensor<256x16xf32> {train.role = #train<role input>, train.name = "x"},
    %y: tensor<256xi32> {train.role = #train<role label>, train.name = "y"}) -> tensor<f32> {
  %xh = train.cast %x : tensor<256x16xf32> -> tensor<256x16xbf16>
  %w0h = train.cast %w0 : tensor<16x64xf32> -> tensor<16x64xbf16>
  %m0 = train.matmul %xh, %w0h : tensor<256x16xbf16>, tensor<16x64xbf16> -> tensor<256x64xbf16>
  %b0h = train.cast %b0 : tensor<64xf32> -> tensor<64xbf16>
  %a0 = train.bias_add %m0, %b0h : tensor<256x64xbf16>, tensor<64xbf16>
  %h0 = train.gelu %a0 : tensor<256x64xbf16>
  %h0f = train.cast %h0 : tensor<256x64xbf16> -> tensor<256x64xf32>
  %n = train.layer_norm %h0f, %g, %beta : tensor<256x64xf32>, tensor<64xf32>
  %nh = train.cast %n : tensor<256x64xf32> -> tensor<256x64xbf16>
  %w1h = train.cast %w1 : tensor<64x10xf32> -> tensor<64x10xbf16>
  %m1 = train.matmul %nh, %w1h : tensor<256x64xbf16>, tensor<64x10xbf16> -> tensor<256x10xbf16>
  %l = train.cast %m1 : tensor<256x10xbf16> -> tensor<256x10xf32>
  %loss = train.cross_entropy %l, %y : tensor<256x10xf32>, tensor<256xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
