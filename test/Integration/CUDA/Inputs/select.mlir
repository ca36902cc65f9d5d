// Comparison, selection, extremum and stop_gradient ops for
// select-codegen.test.
func.func @f(%w: tensor<4x3xf32> {train.role = #train<role param>}, %b: tensor<3xf32> {train.role = #train<role param>},
             %x: tensor<8x4xf32> {train.role = #train<role input>}, %ids: tensor<8x3xi64> {train.role = #train<role input>},
             %y: tensor<8xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %pad = arith.constant dense<0> : tensor<i64>
  %fill = arith.constant dense<-1.0> : tensor<f32>
  %m = train.compare %ids, %pad {predicate = #train<cmp eq>} : tensor<8x3xi64>, tensor<i64> -> tensor<8x3xf32>
  %a = train.where %m, %fill, %h : tensor<8x3xf32>, tensor<f32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %mx = train.maximum %a, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %mn = train.minimum %mx, %h : tensor<8x3xf32>
  %st = train.stop_gradient %mx : tensor<8x3xf32>
  %sc = train.mul %mn, %st : tensor<8x3xf32>
  %am = train.amax %sc {dims = array<i64: 1>} : tensor<8x3xf32> -> tensor<8xf32>
  %l = train.mse_loss %am, %y : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
