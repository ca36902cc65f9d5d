//===- TrainInterfaces.td - Cost and autodiff interfaces ---*- tablegen -*-===//
//
// The two interfaces every train op implements, so that the cost model and
// autodiff work on ops they do not know (the Toy ShapeInference pattern).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_DIALECT_TRAIN_IR_TRAININTERFACES_TD
#define REMAT_DIALECT_TRAIN_IR_TRAININTERFACES_TD

include "mlir/IR/OpBase.td"

def Train_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::remat::train";
  let description = [{
    What an op costs: floating-point operations and bytes moved. The
    rematerialization pass prices recomputing the op by its FLOPs, or by its
    roofline time on a target (CostModel.h) from both.
  }];
  let methods = [
    InterfaceMethod<"Returns the floating-point operations of one execution.",
      "int64_t", "getFlops">,
    InterfaceMethod<"Returns the bytes read from operands.",
      "int64_t", "getBytesRead", (ins), [{}], [{
        int64_t bytes = 0;
        for (::mlir::Value v : $_op->getOperands())
          bytes += ::mlir::remat::train::getTensorBytes(v.getType());
        return bytes;
      }]>,
    InterfaceMethod<"Returns the bytes written to results.",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        int64_t bytes = 0;
        for (::mlir::Value v : $_op->getResults())
          bytes += ::mlir::remat::train::getTensorBytes(v.getType());
        return bytes;
      }]>,
    InterfaceMethod<[{
        Returns true when the op is a contraction (matrix product,
        convolution), which runs at a library's GEMM rate rather than that
        of generated loops.
      }],
      "bool", "isContraction", (ins), [{}], [{ return false; }]>,
    InterfaceMethod<[{
        Returns the operand whose buffer the lowering overwrites with the
        result when that operand is a donated function argument (a
        parameter), or nullopt. Such an op allocates nothing and must be the
        last user of that operand.
      }],
      "std::optional<unsigned>", "getInPlaceOperand", (ins), [{}],
      [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        Returns the bytes of scratch memory the lowering allocates for the
        duration of the op (partial results of a reduction done in
        parallel), on top of its result. The memory model counts them at
        the op's computation, so predicted peaks stay exact.
      }],
      "int64_t", "getWorkspaceBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

def Train_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::mlir::remat::train";
  let description = [{
    Reverse-mode differentiation of a single-result op: given the gradient of
    the loss with respect to the result, build the gradients with respect to
    the operands at the builder's insertion point.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends one gradient per operand to `operandGrads` (a null value for
        an operand that is not differentiable, such as a label). Emits an
        error and fails if the op cannot be differentiated.
      }],
      "::llvm::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$resultGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // REMAT_DIALECT_TRAIN_IR_TRAININTERFACES_TD
