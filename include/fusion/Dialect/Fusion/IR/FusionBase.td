//===- FusionBase.td - fusion dialect definition -----------*- tablegen -*-===//
//
// The `fusion` dialect: normalization, matmul and attention ops (forward and
// backward) on ranked tensors, and the fused ops that the fusion passes form.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONBASE_TD
#define FUSION_DIALECT_FUSION_IR_FUSIONBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Fusion_Dialect : Dialect {
  let name = "fusion";
  let cppNamespace = "::mlir::fusion";
  let summary = "normalization, matmul and attention ops, and their fused forms";
  let description = [{
    The `fusion` dialect holds the programs the compiler optimizes: RMSNorm,
    LayerNorm, matmul and generalized dot-product attention (GDPA), forward
    and backward, on ranked tensors of bf16, f16 or f32 (level L0 of
    `docs/design.md`), and the fused ops that the fusion passes produce from
    them (`fusion.fused_matmul`, `fusion.norm_attention` and its grad; level
    L1). Every op has a reference lowering to upstream linalg
    (`convert-fusion-to-linalg`), so every program runs on the CPU.

    Statistics (mean, rstd) and all reductions are computed in f32 whatever
    the element type; results are rounded to their declared element type once,
    at the end of each op.

    The compilation target is a module attribute,
    `fusion.target = #fusion.target<"sm_90a">`. A function's weight
    arguments may be marked `fusion.weight` (a unit attribute), for
    `fusion-outline-weight-prep`, which leaves `fusion.prepared = <index>`
    on the arguments it adds and `fusion.prepare = @<f>_prepare` on the
    function.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// A function argument that is a weight (unit attribute).
    static constexpr ::llvm::StringLiteral kWeightArgAttrName = "fusion.weight";
    /// An argument that receives the prepared value of this index.
    static constexpr ::llvm::StringLiteral kPreparedArgAttrName =
        "fusion.prepared";
    /// A function's weight preparation (a symbol reference).
    static constexpr ::llvm::StringLiteral kPrepareFuncAttrName =
        "fusion.prepare";
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

/// Every fusion op: each static tensor operand and result has an element
/// count and a byte size that fit in int64 (mlir::fusion::verifyTensorSizes),
/// checked before the op's own verifier, so that no size arithmetic after
/// verification overflows on them.
def Fusion_SizedTensors : NativeOpTrait<"SizedTensors"> {
  let cppNamespace = "::mlir::fusion::OpTrait";
}

class Fusion_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fusion_Dialect, mnemonic, !listconcat([Fusion_SizedTensors], traits)>;

class Fusion_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Fusion_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // FUSION_DIALECT_FUSION_IR_FUSIONBASE_TD
