// train.unary kinds for unary-codegen.test.
func.func @f(%w: tensor<4x3xf32> {train.role = #train<role param>}, %x: tensor<8x4xf32> {train.role = #train<role input>},
             %y: tensor<8x3xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %a = train.unary %h {kind = #train<unary mish>} : tensor<8x3xf32>
  %b = train.unary %a {kind = #train<unary pow>, alpha = 1.5 : f64} : tensor<8x3xf32>
  %c = train.unary %b {kind = #train<unary erf>} : tensor<8x3xf32>
  %l = train.mse_loss %c, %y : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
