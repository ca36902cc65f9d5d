// RUN: remat-opt %s --split-input-file --train-autodiff="optimizer=adamw runtime-lr" | FileCheck %s --check-prefix=ADAMW
// RUN: remat-opt %s --split-input-file --train-autodiff="optimizer=sgd momentum=0.9 nesterov weight-decay=0.01" | FileCheck %s --check-prefix=NESTEROV
// RUN: remat-opt %s --split-input-file --train-autodiff="optimizer=adam weight-decay=0.1 return-gradients" | FileCheck %s --check-prefix=ADAM
// RUN: not remat-opt %s --split-input-file --train-autodiff="optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not remat-opt %s --split-input-file --train-autodiff="optimizer=adam momentum=0.9" 2>&1 | FileCheck %s --check-prefix=NOTSGD
// RUN: not remat-opt %s --split-input-file --train-autodiff="nesterov" 2>&1 | FileCheck %s --check-prefix=NESTEROVBAD

// The optimizer's state becomes arguments named after the parameter, as
// torch.optim names it, updated in place and returned after the
// parameters; the step count and, with runtime-lr, the learning rate are
// arguments too. AdamW decays the parameter (decoupled), Adam the gradient.

// ADAMW-LABEL: func.func @linear
// ADAMW-SAME: %[[W:[a-z0-9_]+]]: tensor<4x2xf32> {train.name = "w", train.role = #train<role param>}
// ADAMW-SAME: %[[LR:[a-z0-9_]+]]: tensor<f32> {train.name = "lr", train.role = #train<role lr>}
// ADAMW-SAME: %[[T:[a-z0-9_]+]]: tensor<i64> {train.name = "step", train.role = #train<role step>}
// ADAMW-SAME: %[[M:[a-z0-9_]+]]: tensor<4x2xf32> {train.name = "w.exp_avg", train.role = #train<role state>}
// ADAMW-SAME: %[[V:[a-z0-9_]+]]: tensor<4x2xf32> {train.name = "w.exp_avg_sq", train.role = #train<role state>}
// ADAMW-SAME: -> (tensor<f32> {train.role = #train<role loss>}, tensor<4x2xf32> {train.param = 0 : i64, train.role = #train<role updated_param>}, tensor<4x2xf32> {train.param = 0 : i64, train.role = #train<role updated_state>}, tensor<4x2xf32> {train.param = 0 : i64, train.role = #train<role updated_state>})
// ADAMW: %[[G:[a-z0-9_]+]] = train.matmul %{{.+}}, %{{.+}} {transpose_lhs}
// ADAMW: %[[M1:[a-z0-9_]+]] = train.adam_moment %[[M]], %[[G]], %[[W]] {beta = 9.000000e-01 : f64}
// ADAMW: %[[V1:[a-z0-9_]+]] = train.adam_moment %[[V]], %[[G]], %[[W]] {beta = 0.99899999999999999 : f64, square}
// ADAMW: %[[W1:[a-z0-9_]+]] = train.adam_update %[[W]], %[[M1]], %[[V1]], %[[T]] lr(%[[LR]] : tensor<f32>) {{{.*}}weight_decay = 1.000000e-02 : f64}
// ADAMW: return %{{.+}}, %[[W1]], %[[M1]], %[[V1]]

// NESTEROV-LABEL: func.func @linear
// NESTEROV-NOT: train.role = #train<role lr>
// NESTEROV-SAME: %[[T:[a-z0-9_]+]]: tensor<i64> {train.name = "step", train.role = #train<role step>}
// NESTEROV-SAME: %[[B:[a-z0-9_]+]]: tensor<4x2xf32> {train.name = "w.momentum_buffer", train.role = #train<role state>}
// NESTEROV: %[[B1:[a-z0-9_]+]] = train.momentum_update %[[B]], %[[G:[a-z0-9_]+]], %[[W:[a-z0-9_]+]], %[[T]] {momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-02 : f64}
// NESTEROV: train.sgd_update %[[W]], %[[G]] buffer(%[[B1]] : tensor<4x2xf32>) {learning_rate = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-02 : f64}

// ADAM-LABEL: func.func @linear
// ADAM-SAME: -> (tensor<f32> {train.role = #train<role loss>}, {{.*}}updated_state{{.*}}updated_state{{.*}}#train<role grad>
// ADAM: train.adam_moment %{{.+}}, %{{.+}}, %{{.+}} {beta = 9.000000e-01 : f64, weight_decay = 1.000000e-01 : f64}
// ADAM: train.adam_update
// ADAM-NOT: weight_decay
// ADAM-SAME: : tensor<4x2xf32>

// UNKNOWN: error: unknown optimizer 'rmsprop'; expected sgd, adam or adamw
// NOTSGD: error: momentum, dampening and nesterov are SGD's; the optimizer is adam
// NESTEROVBAD: error: Nesterov momentum needs a positive momentum and zero dampening
func.func @linear(%w: tensor<4x2xf32> {train.role = #train<role param>, train.name = "w"},
                  %x: tensor<8x4xf32> {train.role = #train<role input>},
                  %y: tensor<8x2xf32> {train.role = #train<role label>}) -> tensor<f32> {
  %p = train.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %l = train.mse_loss %p, %y : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
