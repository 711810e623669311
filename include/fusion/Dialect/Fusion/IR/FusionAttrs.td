//===- FusionAttrs.td - fusion attributes and enums --------*- tablegen -*-===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONATTRS_TD
#define FUSION_DIALECT_FUSION_IR_FUSIONATTRS_TD

include "fusion/Dialect/Fusion/IR/FusionBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Activation (GDPA)
//===----------------------------------------------------------------------===//

def Fusion_ActivationIdentity : I32EnumAttrCase<"identity", 0>;
def Fusion_ActivationRelu : I32EnumAttrCase<"relu", 1>;
def Fusion_ActivationGelu : I32EnumAttrCase<"gelu", 2>;
def Fusion_ActivationGeluTanh : I32EnumAttrCase<"gelu_tanh", 3>;
def Fusion_ActivationSilu : I32EnumAttrCase<"silu", 4>;

def Fusion_Activation : I32EnumAttr<"Activation",
    "element-wise activation: GDPA's in place of softmax, an MLP's", [
      Fusion_ActivationIdentity, Fusion_ActivationRelu, Fusion_ActivationGelu,
      Fusion_ActivationGeluTanh, Fusion_ActivationSilu]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fusion";
}

def Fusion_ActivationAttr : EnumAttr<Fusion_Dialect, Fusion_Activation, "activation"> {
  let summary = "element-wise activation";
  let description = [{
    The activation fusion.gdpa applies to each attention score (there is no
    softmax), fusion.activation to each element, and fusion.fused_matmul's
    `activation` to each output:

    | value       | act(s)                                          |
    |-------------|-------------------------------------------------|
    | `identity`  | s                                               |
    | `relu`      | max(s, 0)                                       |
    | `gelu`      | 0.5 s (1 + erf(s / sqrt(2)))                    |
    | `gelu_tanh` | 0.5 s (1 + tanh(sqrt(2/pi) (s + 0.044715 s^3))) |
    | `silu`      | s / (1 + exp(-s))                               |
  }];
  // One error naming the kind and listing the cases (ODS would print the
  // C++ enum name).
  let assemblyFormat = "`<` custom<ActivationKeyword>($value) `>`";
}

//===----------------------------------------------------------------------===//
// Fused-matmul prologue and epilogue kinds
//===----------------------------------------------------------------------===//

def Fusion_PrologueNone : I32EnumAttrCase<"none", 0>;
def Fusion_PrologueRMSNorm : I32EnumAttrCase<"rms_norm", 1>;
def Fusion_PrologueLayerNorm : I32EnumAttrCase<"layer_norm", 2>;

def Fusion_PrologueKind : I32EnumAttr<"PrologueKind",
    "normalization applied lazily to the rows of a fused matmul's A operand", [
      Fusion_PrologueNone, Fusion_PrologueRMSNorm, Fusion_PrologueLayerNorm]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fusion";
}

def Fusion_PrologueKindAttr
    : EnumAttr<Fusion_Dialect, Fusion_PrologueKind, "prologue"> {
  let summary = "fused-matmul prologue (Lazy Pre-Norm)";
  // One error naming the kind and listing the cases (ODS would print the
  // C++ enum name).
  let assemblyFormat = "`<` custom<PrologueKindKeyword>($value) `>`";
}

def Fusion_EpilogueNone : I32EnumAttrCase<"none", 0>;
def Fusion_EpilogueRowScale : I32EnumAttrCase<"row_scale", 1>;
def Fusion_EpilogueRMSNorm : I32EnumAttrCase<"rms_norm", 2>;
def Fusion_EpilogueLayerNorm : I32EnumAttrCase<"layer_norm", 3>;
def Fusion_EpilogueRMSNormGrad : I32EnumAttrCase<"rms_norm_grad", 4>;
def Fusion_EpilogueLayerNormGrad : I32EnumAttrCase<"layer_norm_grad", 5>;

def Fusion_EpilogueKind : I32EnumAttr<"EpilogueKind",
    "computation applied to the rows of a fused matmul's accumulator", [
      Fusion_EpilogueNone, Fusion_EpilogueRowScale, Fusion_EpilogueRMSNorm,
      Fusion_EpilogueLayerNorm, Fusion_EpilogueRMSNormGrad,
      Fusion_EpilogueLayerNormGrad]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fusion";
}

def Fusion_EpilogueKindAttr
    : EnumAttr<Fusion_Dialect, Fusion_EpilogueKind, "epilogue"> {
  let summary = "fused-matmul epilogue";
  // One error naming the kind and listing the cases (ODS would print the
  // C++ enum name).
  let assemblyFormat = "`<` custom<EpilogueKindKeyword>($value) `>`";
}

//===----------------------------------------------------------------------===//
// Target
//===----------------------------------------------------------------------===//

def Fusion_TargetAttr : Fusion_Attr<"Target", "target"> {
  let summary = "the GPU architecture a module is compiled for";
  let description = [{
    Set on the module as `fusion.target = #fusion.target<"sm_90a">`; every
    pass that needs hardware knowledge reads it from there. Known chips:
    `sm_90a` (Hopper: H100, H200) and `sm_100a` (Blackwell: B200). Any other
    chip is rejected with a diagnostic listing the known ones.

    Example:
    ```mlir
    module attributes {fusion.target = #fusion.target<"sm_90a">} {}
    ```
  }];
  let parameters = (ins StringRefParameter<"chip name, e.g. sm_90a">:$chip);
  // Custom: one diagnostic that names the expected form and the known chips
  // when the chip is not a quoted string.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the module attribute that holds the target.
    static constexpr ::llvm::StringLiteral getModuleAttrName() {
      return ::llvm::StringLiteral("fusion.target");
    }
    /// The chips this compiler knows, comma-separated, for diagnostics.
    static ::llvm::StringRef getKnownChips();
    /// The target attached to `module`, or null when there is none.
    static TargetAttr lookup(::mlir::Operation *op);
  }];
}


//===----------------------------------------------------------------------===//
// Kernel configuration (L2)
//===----------------------------------------------------------------------===//

def Fusion_KernelConfigAttr : Fusion_Attr<"KernelConfig", "kernel_config"> {
  let summary = "the GPU kernel configuration chosen for a fused op";
  let description = [{
    Attached by `fusion-plan-kernels` to each `fusion.fused_matmul` (as the
    `fusion.kernel` attribute) and read by `convert-fusion-to-gpu`:

    | parameter        | meaning                                                        |
    |------------------|----------------------------------------------------------------|
    | `tile_m`, `tile_n`, `tile_k` | the CTA tile of the GEMM (rows, columns, K step)   |
    | `stages`         | depth of the shared-memory ring of A and B tiles (TMA loads)   |
    | `cluster_n`      | CTAs of one cluster along N sharing a row block (1: no cluster) |
    | `consumers`      | consumer warpgroups issuing the MMA (one producer warp besides) |
    | `smem_bytes`     | dynamic shared memory the kernel is launched with              |
    | `epilogue_warps` | a norm epilogue over several CTAs (16-bit output) finishes in  |
    |                  | warps 1-3 of the producer warpgroup, from whole-tile staging,  |
    |                  | overlapped with the next tile's MMA (default: in registers)    |
    | `global_rows`    | a norm row over several CTAs without a cluster: the rows'     |
    |                  | partial statistics go through global memory                    |
    | `staged_residual`| with `epilogue_warps`, the residual (of the output's type) is  |
    |                  | TMA-loaded into the staging buffers by the epilogue warps      |
    | `split_k`        | a plain GEMM whose few output tiles would leave SMs idle (a    |
    |                  | weight gradient): K in split_k ranges, each tile's f32 partial |
    |                  | sums in a workspace, summed in order by a second kernel        |
    | `stream_k`       | opt-in: a GEMM without a row reduction or prologue whose tiles |
    |                  | are not a multiple of the grid spreads its last full wave and  |
    |                  | the partial one over the CTAs by K steps (a tile cut between   |
    |                  | two CTAs, the later part's f32 sums handed to the CTA that     |
    |                  | finishes it through global memory); measured slower (L2)       |
    | `decode_splits`  | a small-M configuration only: up to this many K ranges per     |
    |                  | tile, the count chosen per call so that every (tile, range)    |
    |                  | has a CTA; range 0 adds the others' sums (a workspace slot     |
    |                  | each) and runs the epilogue (fusion-plan-kernels               |
    |                  | small-m-split; experimental)                                   |
    | `cluster_m`      | CTAs of a cluster along M (consecutive row blocks, the same    |
    |                  | column block): each loads its share of B's tile once by TMA    |
    |                  | multicast into every CTA of the cluster, halving B's L2 reads  |
    |                  | (sm_90a; not with cluster_n, split_k, stream_k, decode_splits, |
    |                  | epilogue_warps or global_rows; fusion-plan-kernels multicast)  |

    `epilogue_warps`, `global_rows` and `staged_residual` are the epilogue
    strategy the planner chose (`chooseGemmEpilogueStrategy` in
    `fusion/Target/NVPTX/GemmKernelLayout.h`); the generator reads them, it
    does not re-derive them. They, `split_k`, `stream_k`, `decode_splits` and
    `cluster_m` are printed only when set.

    A GEMM whose work units leave SMs idle may carry the unit attribute
    `fusion.side_kernel`: the next kernel, a norm gradient that does not use
    the GEMM's result (`findSideKernel`), runs beside it, both on side
    streams forked after the work before them (the GEMM's of the greatest
    priority) and joined before the next kernel; a split-K GEMM's ranges
    are then planned for fewer SMs (fusion-plan-kernels side-sms).

    A GEMM planned for a dynamic token count may also carry
    `fusion.kernel_small_m`, a second configuration of the same op (tiles
    of 64 columns; `planSmallMFusedMatmul`): the generator builds both
    kernels, and the host launches the small-M one when the main kernel's
    tiles, ceil(M / tile_m) x ceil(N / tile_n), would occupy at most half
    the SMs (decode-sized calls: 16 tokens at N = 4096 are 16 tiles of
    256 columns, 64 of 64).

    Example:
    ```mlir
    fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64,
        stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144>
    fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64,
        stages = 3, cluster_n = 4, consumers = 2, smem_bytes = 226816,
        epilogue_warps = true, staged_residual = true>
    fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64,
        stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 198144, cluster_m = 2>
    ```
  }];
  let parameters = (ins "int64_t":$tile_m, "int64_t":$tile_n, "int64_t":$tile_k,
                        "int64_t":$stages, "int64_t":$cluster_n,
                        "int64_t":$consumers, "int64_t":$smem_bytes,
                        DefaultValuedParameter<"bool", "false">:$epilogue_warps,
                        DefaultValuedParameter<"bool", "false">:$global_rows,
                        DefaultValuedParameter<"bool", "false">:$staged_residual,
                        DefaultValuedParameter<"int64_t", "1">:$split_k,
                        DefaultValuedParameter<"bool", "false">:$stream_k,
                        DefaultValuedParameter<"int64_t", "1">:$decode_splits,
                        DefaultValuedParameter<"int64_t", "1">:$cluster_m);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the discardable attribute holding the configuration.
    static constexpr ::llvm::StringLiteral getAttrName() {
      return ::llvm::StringLiteral("fusion.kernel");
    }
    /// The name of the discardable attribute holding the small-M kernel's
    /// configuration (a GEMM planned for a dynamic token count).
    static constexpr ::llvm::StringLiteral getSmallMAttrName() {
      return ::llvm::StringLiteral("fusion.kernel_small_m");
    }
    /// The swapped decode body's configuration (fusion-plan-kernels
    /// decode-swap): tile_m tokens by tile_n features.
    static constexpr ::llvm::StringLiteral getDecodeAttrName() {
      return ::llvm::StringLiteral("fusion.kernel_decode");
    }
    /// The unit attribute of a GEMM whose next kernel runs beside it on a
    /// side stream (fusion-plan-kernels side-kernels; findSideKernel).
    static constexpr ::llvm::StringLiteral getSideKernelAttrName() {
      return ::llvm::StringLiteral("fusion.side_kernel");
    }
  }];
}

#endif // FUSION_DIALECT_FUSION_IR_FUSIONATTRS_TD
