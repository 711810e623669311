//===- Passes.td - fusion conversion passes ----------------*- tablegen -*-===//

#ifndef FUSION_CONVERSION_PASSES
#define FUSION_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FusionToLinalg
//===----------------------------------------------------------------------===//

def ConvertFusionToLinalgPass : Pass<"convert-fusion-to-linalg"> {
  let summary = "lower every fusion op to its reference semantics in linalg";
  let description = [{
    Rewrites each `fusion` op, fused ones included, into upstream `linalg`,
    `tensor`, `arith`, `math` and `scf` ops on tensors that compute exactly
    the formula in the op's description: inputs are extended to f32, every
    reduction accumulates in f32, and each result is rounded once to its
    element type. This is the reference semantics of the dialect: it is how
    programs run on the CPU (`fusion-runner`), and how every rewrite is
    checked, by running the program before and after it on the same inputs.

    Example:
    ```mlir
    %y, %rstd = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
        : tensor<4x8xbf16> -> tensor<4x8xbf16>, tensor<4xf32>
    ```
    becomes (abridged)
    ```mlir
    %xf = linalg.generic ... ins(%x : tensor<4x8xbf16>)  // arith.extf
    %ss = linalg.generic {iterator_types = ["parallel", "reduction"]} ...
    %rstd = linalg.generic ... // math.rsqrt(%ss / 8 + eps)
    %y = linalg.generic ... ins(%xf, %rstd ...)  // x * rstd, arith.truncf
    ```

    #### Input invariants
    - Verified `fusion` ops on ranked tensors; dynamic dimensions are allowed.
    - Jagged attention offsets are non-decreasing, start at 0 and end at or
      before the number of query tokens (not checked at run time).

    #### Output IR
    No `fusion` op remains; only `linalg`, `tensor`, `arith`, `math`, `scf`
    ops, which bufferize with `one-shot-bufferize`. Reductions are
    `linalg.generic` ops with f32 accumulators; matmuls are `linalg.generic`
    contractions in f32. Jagged attention is an `scf.for` over the batch.

    #### Options
    None.

    #### Target requirements
    None: this is the target-independent reference, used on the CPU.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FUSION_CONVERSION_PASSES
