//===- FusionOps.td - fusion ops ---------------------------*- tablegen -*-===//
//
// L0 ops (matmul, norms, attention, their gradients) and L1 fused ops.
// Shape rules live in the C++ verifiers (FusionOps.cpp); element-type rules
// are the ODS constraints below.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONOPS_TD
#define FUSION_DIALECT_FUSION_IR_FUSIONOPS_TD

include "fusion/Dialect/Fusion/IR/FusionBase.td"
include "fusion/Dialect/Fusion/IR/FusionAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// The element types every data operand may have.
def Fusion_FloatTensor : RankedTensorOf<[BF16, F16, F32]>;
/// Statistics and parameter gradients are f32.
def Fusion_F32Tensor : RankedTensorOf<[F32]>;
/// Jagged-sequence offsets.
def Fusion_OffsetsTensor : RankedTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// L0: matmul and add
//===----------------------------------------------------------------------===//

def Fusion_MatmulOp : Fusion_Op<"matmul", [Pure]> {
  let summary = "matrix product with f32 accumulation and an optional bias";
  let description = [{
    `result = op(lhs) @ op(rhs) + bias`, where `op` transposes its operand
    when `transpose_lhs` / `transpose_rhs` is set:

        result[m, n] = round(sum_k f32(A[m, k]) * f32(B[k, n]) + f32(bias[n]))
        A = transpose_lhs ? lhs^T : lhs,   B = transpose_rhs ? rhs^T : rhs

    Shapes: `A` is [M, K], `B` is [K, N], `bias` (optional) is [N], `result`
    is [M, N]. Products, the sum and the bias are f32 whatever the element
    types; the sum is rounded once to the result element type. Operand and
    result element types may differ.

    PyTorch's `nn.Linear(in, out)` is `fusion.matmul %x, %weight bias(%b)
    {transpose_rhs}` with its weight as stored, [out, in]. The fusion passes
    absorb the bias into the GEMM kernel's column bias, also in front of a
    residual and a norm epilogue; `fusion-fuse` also turns a matmul followed
    by a `fusion.add` of an [N] vector (a broadcast bias) into this form.

    Example:
    ```mlir
    %c = fusion.matmul %a, %b : tensor<4096x512xbf16>, tensor<512x1024xbf16>
        -> tensor<4096x1024xbf16>
    // nn.Linear(512, 1024): weight [1024, 512], bias [1024]
    %d = fusion.matmul %x, %w bias(%bias : tensor<1024xbf16>) {transpose_rhs}
        : tensor<4096x512xbf16>, tensor<1024x512xbf16> -> tensor<4096x1024xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$lhs, Fusion_FloatTensor:$rhs,
                       Optional<Fusion_FloatTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Fusion_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$lhs, "Value":$rhs,
                   CArg<"bool", "false">:$transposeLhs,
                   CArg<"bool", "false">:$transposeRhs), [{
      build($_builder, $_state, result, lhs, rhs, /*bias=*/Value(),
            transposeLhs, transposeRhs);
    }]>
  ];
  let hasVerifier = 1;
}

/// The binary element-wise ops: NumPy broadcasting of rhs against lhs.
class Fusion_BroadcastingBinaryOp<string mnemonic, string what, string formula,
                                  string use>
    : Fusion_Op<mnemonic, [Pure]> {
  let summary = "element-wise " # what # " with rhs broadcast (" # use # ")";
  let description = [{
    `result = lhs }] # formula # [{ rhs`, element by element, computed in f32 and rounded
    to the result element type. `rhs` broadcasts against `lhs` as in NumPy and
    PyTorch: aligned at the innermost dimension, each of its dimensions is
    lhs's size or 1, and missing leading dimensions repeat it. The result has
    lhs's type; rhs may have another float element type.

    Common forms on an [M, N] lhs: rhs [M, N] (same shape), [N] or [1, N]
    (a row vector added to every row, e.g. a bias), [M, 1] (one value per
    row). When both operands have the same type, the type is written once.

    Example:
    ```mlir
    %h = fusion.}] # mnemonic # [{ %x, %y : tensor<4096x512xbf16>
    %z = fusion.}] # mnemonic # [{ %x, %b : tensor<4096x512xbf16>, tensor<512xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$lhs, Fusion_FloatTensor:$rhs);
  let results = (outs Fusion_FloatTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "Value":$lhs, "Value":$rhs), [{
      build($_builder, $_state, lhs.getType(), lhs, rhs);
    }]>
  ];
}

def Fusion_AddOp : Fusion_BroadcastingBinaryOp<"add", "sum", "+",
    "residual connection, bias">;
def Fusion_MulOp : Fusion_BroadcastingBinaryOp<"mul", "product", "*",
    "scaling by a vector">;

def Fusion_ActivationOp : Fusion_Op<"activation",
    [Pure, SameOperandsAndResultType]> {
  let summary = "element-wise activation (an MLP's silu, gelu, relu)";
  let description = [{
    `result = act(input)`, element by element, computed in f32 and rounded
    to the element type, with `act` one of `#fusion.activation` (the same
    formulas as fusion.gdpa's: `silu`, `gelu`, `gelu_tanh`, `relu`,
    `identity`).

    The activation between an MLP's two linear layers: GPT-2's and BERT's
    `gelu(fc1(x))`, and the gate of Llama's gated MLP,
    `down(silu(gate(x)) * up(x))`. `fusion-fuse` moves it into the epilogue
    of the GEMM that produces its input (`fusion.fused_matmul`'s
    `activation`), and a gated product into one GEMM over both weights
    (`up`); what it leaves runs as an element-wise kernel.

    Example (Llama's gated MLP, as written):
    ```mlir
    %g = fusion.matmul %x, %wg {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    %u = fusion.matmul %x, %wu {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    %a = fusion.activation %g {activation = #fusion.activation<silu>}
        : tensor<?x11008xbf16>
    %h = fusion.mul %a, %u : tensor<?x11008xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$input, Fusion_ActivationAttr:$activation);
  let results = (outs Fusion_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Fusion_RopeOp : Fusion_Op<"rope",
    [Pure, AllTypesMatch<["cos", "sin"]>]> {
  let summary = "rotary position embedding of each head of a projection";
  let description = [{
    Rotates each head of `input` ([..., H * D], the output of a q or k
    projection, heads of `head_dim` D side by side) by its token's angles:
    with `cos` and `sin` [..., R] (R even, R <= D; the leading dimensions
    input's, or 1 where one table serves them all; for a 2-D input [M, N],
    tables [T, R] whose T divides M, row m reading table row m mod T: a
    table per position [L, R] serves the B sequences of M = B x L tokens)
    and h = R / 2, for each head and column j < R,

        result[j] = input[j] * cos[j] - input[j + h] * sin[j]    (j < h)
        result[j] = input[j] * cos[j] + input[j - h] * sin[j]    (j >= h)

    (Hugging Face's `q * cos + rotate_half(q) * sin`; with `interleaved`
    the pairs are (2i, 2i + 1), GPT-J's `rotate_every_two`), and columns j
    >= R pass through (partial rotary, GPT-NeoX's `rotary_pct`). Computed in
    f32 and rounded once to input's element type.

    Example (Llama's q after q_proj: 32 heads of 128, the tables per token):
    ```mlir
    %q = fusion.rope %x, %cos, %sin {head_dim = 128 : i64}
        : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$input, Fusion_FloatTensor:$cos,
                       Fusion_FloatTensor:$sin, I64Attr:$head_dim,
                       UnitAttr:$interleaved);
  let results = (outs Fusion_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// L0: normalization
//===----------------------------------------------------------------------===//

def Fusion_RMSNormOp : Fusion_Op<"rms_norm", [Pure]> {
  let summary = "RMS normalization over the innermost dimension";
  let description = [{
    For each row `x` of `input` (innermost size N):

        rstd = 1 / sqrt(sum(x^2) / N + epsilon)
        y    = x * rstd * weight

    `weight` is optional and has shape [N]. `rstd` accumulates in f32. The
    optional second result holds it per row (shape: `input` without its
    innermost dimension, f32), for the backward. `epsilon` is required.

    Example:
    ```mlir
    %y, %rstd = fusion.rms_norm %x weight(%w : tensor<512xbf16>)
        {epsilon = 1.0e-05 : f32}
        : tensor<4096x512xbf16> -> tensor<4096x512xbf16>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$input,
                       Optional<Fusion_FloatTensor>:$weight, F32Attr:$epsilon);
  let results = (outs Fusion_FloatTensor:$output,
                      Optional<Fusion_F32Tensor>:$rstd);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)? attr-dict
    `:` type($input) `->` type($output) (`,` type($rstd)^)?
  }];
  let hasVerifier = 1;
}

def Fusion_LayerNormOp : Fusion_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "layer normalization over the innermost dimension";
  let description = [{
    For each row `x` of `input` (innermost size N):

        mean = sum(x) / N,   var = sum((x - mean)^2) / N
        rstd = 1 / sqrt(var + epsilon)
        y    = (x - mean) * rstd * weight + bias

    `weight` and `bias` are optional and have shape [N]. The variance is the
    two-pass (centered) biased variance. Statistics accumulate in f32; the
    `mean` and `rstd` results hold them per row (shape: `input` without its
    innermost dimension, f32), for the backward.

    Example:
    ```mlir
    %y, %mean, %rstd = fusion.layer_norm %x weight(%w : tensor<512xbf16>)
        bias(%b : tensor<512xbf16>) {epsilon = 1.0e-05 : f32}
        : tensor<4096x512xbf16>
        -> tensor<4096x512xbf16>, tensor<4096xf32>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$input,
                       Optional<Fusion_FloatTensor>:$weight,
                       Optional<Fusion_FloatTensor>:$bias, F32Attr:$epsilon);
  let results = (outs Fusion_FloatTensor:$output, Fusion_F32Tensor:$mean,
                      Fusion_F32Tensor:$rstd);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($input) `->` type($output) `,` type($mean) `,` type($rstd)
  }];
  let hasVerifier = 1;
}

def Fusion_RMSNormGradOp : Fusion_Op<"rms_norm_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "gradient of rms_norm, plus an optional residual gradient";
  let description = [{
    Given the forward input `x`, its saved `rstd` and the output gradient `dy`,
    per row (innermost size N):

        x_hat = x * rstd,   g = dy * weight   (g = dy without weight)
        dx    = rstd * (g - x_hat * sum(g * x_hat) / N) + residual
        dweight[n] = sum over all rows of dy[., n] * x_hat[., n]

    `dweight` (f32, shape [N]) is a result exactly when `weight` is given.

    With `normalized_input`, `input` holds the forward's normalized value
    `x_hat` (the unweighted `rms_norm` output) instead of `x`, and is used as
    `x_hat` directly; `rstd` still scales dx. A training step that saves
    x_hat instead of the norm's input (`fusion-fold-norm-weight`) reads it so.

    `residual` (optional, the shape of `dx`, any float element type) is the
    gradient reaching the norm's input through the residual branch of a
    block, `x + f(norm(x))`: `dx` is then the input's whole gradient. It
    replaces a `fusion.add` of the norm gradient and that gradient
    (`fusion-plan-kernels` folds one in), reading the residual in the same
    pass and writing dx once. All arithmetic is f32, the residual added in
    f32; `dx` is rounded once to its element type (where the separate add
    rounded the norm gradient first, then the sum).

    Example:
    ```mlir
    %dx, %dw = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
        : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>
        -> tensor<4096x512xbf16>, tensor<512xf32>
    // dx = the norm's input gradient + %dres
    %dx2, %dw2 = fusion.rms_norm_grad %dy, %x, %rstd weight(%w : tensor<512xbf16>)
        residual(%dres : tensor<4096x512xbf16>)
        : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>
        -> tensor<4096x512xbf16>, tensor<512xf32>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$grad, Fusion_FloatTensor:$input,
                       Fusion_F32Tensor:$rstd,
                       Optional<Fusion_FloatTensor>:$weight,
                       Optional<Fusion_FloatTensor>:$residual,
                       UnitAttr:$normalized_input);
  let results = (outs Fusion_FloatTensor:$input_grad,
                      Optional<Fusion_F32Tensor>:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $rstd (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    attr-dict `:` type($grad) `,` type($input) `,` type($rstd)
    `->` type($input_grad) (`,` type($weight_grad)^)?
  }];
  let hasVerifier = 1;
}

def Fusion_LayerNormGradOp : Fusion_Op<"layer_norm_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "gradient of layer_norm, plus an optional residual gradient";
  let description = [{
    Given the forward input `x`, its saved `mean` and `rstd` and the output
    gradient `dy`, per row (innermost size N):

        x_hat = (x - mean) * rstd,   g = dy * weight   (g = dy without weight)
        dx    = rstd * (g - sum(g) / N - x_hat * sum(g * x_hat) / N) + residual
        dweight[n] = sum over all rows of dy[., n] * x_hat[., n]
        dbias[n]   = sum over all rows of dy[., n]

    The parameter gradients (f32, shape [N]) follow `dx` in this order:
    `dweight` when `weight` is given, then `dbias` when `with_bias_grad` is set
    (the bias does not enter `dx`, so it is not an operand).

    `residual` (optional, the shape of `dx`, any float element type) is the
    gradient reaching the norm's input through the residual branch of a
    block: `dx` is then the input's whole gradient. It replaces a
    `fusion.add` of the norm gradient and that gradient
    (`fusion-plan-kernels` folds one in). All arithmetic is f32, the residual
    added in f32; `dx` is rounded once to its element type.

    Example:
    ```mlir
    %dx, %dw, %db = fusion.layer_norm_grad %dy, %x, %mean, %rstd
        weight(%w : tensor<512xbf16>) {with_bias_grad}
        : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>,
          tensor<4096xf32> -> tensor<4096x512xbf16>, tensor<512xf32>, tensor<512xf32>
    // dx = the norm's input gradient + %dres
    %dx2 = fusion.layer_norm_grad %dy, %x, %mean, %rstd
        residual(%dres : tensor<4096x512xf32>)
        : tensor<4096x512xbf16>, tensor<4096x512xbf16>, tensor<4096xf32>,
          tensor<4096xf32> -> tensor<4096x512xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$grad, Fusion_FloatTensor:$input,
                       Fusion_F32Tensor:$mean, Fusion_F32Tensor:$rstd,
                       Optional<Fusion_FloatTensor>:$weight,
                       Optional<Fusion_FloatTensor>:$residual,
                       UnitAttr:$with_bias_grad);
  let results = (outs Fusion_FloatTensor:$input_grad,
                      Variadic<Fusion_F32Tensor>:$param_grads);
  let assemblyFormat = [{
    $grad `,` $input `,` $mean `,` $rstd
    (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)? attr-dict
    `:` type($grad) `,` type($input) `,` type($mean) `,` type($rstd)
    `->` type($input_grad) (`,` type($param_grads)^)?
  }];
  let extraClassDeclaration = [{
    /// dweight, or null when the op has no weight.
    ::mlir::Value getWeightGrad() {
      return getWeight() ? getParamGrads()[0] : ::mlir::Value();
    }
    /// dbias, or null without `with_bias_grad`.
    ::mlir::Value getBiasGrad() {
      return getWithBiasGrad() ? getParamGrads().back() : ::mlir::Value();
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// L0: generalized dot-product attention
//===----------------------------------------------------------------------===//

def Fusion_GDPAOp : Fusion_Op<"gdpa", [Pure, AttrSizedOperandSegments]> {
  let summary = "generalized dot-product attention (activation instead of softmax)";
  let description = [{
    For each batch b, head h and query token i:

        s[i, j]      = scale * sum_d q[b, i, h, d] * k[b, j, h, d]
        out[b,i,h,e] = sum_j act(s[i, j]) * v[b, j, h, e]  (+ residual[b,i,h,e])

    The scale multiplies the scores *before* the activation (Kunlun's
    `act(Q K^T / tau) V`). There is no softmax and no row normalization.
    Arithmetic is f32; `out` is rounded once to its element type.

    Shapes, dense: `q` [B, Lq, H, D], `k` [B, Lkv, H, D], `v` [B, Lkv, H, Dv],
    `out` [B, Lq, H, Dv].

    Jagged q: with `offsets` (i32 or i64, shape [B+1], non-decreasing,
    offsets[0] = 0), `q` is [T, H, D] and batch b owns the tokens
    offsets[b] <= t < offsets[b+1]; `out` is [T, H, Dv]. Tokens at or after
    offsets[B] belong to no batch and their output is zero (with a residual,
    the residual: the sum has no attention term). `k` and `v` stay dense,
    [B, Lkv, H, D].

    The optional `residual` (the shape of `out`) is added to the attention
    in f32 before the rounding: the residual connection after attention,
    `h = gdpa(x, k, v) + x` in Kunlun's block, in one kernel
    (`fusion-plan-kernels` folds such a `fusion.add` into the op).

    Example:
    ```mlir
    %o = fusion.gdpa %q, %k, %v offsets(%off : tensor<9xi32>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<2048x2x128xbf16>, tensor<8x128x2x128xbf16>, tensor<8x128x2x128xbf16>
        -> tensor<2048x2x128xbf16>
    ```

    Example (the query added back, the block's inner residual):
    ```mlir
    %h = fusion.gdpa %x, %k, %v residual(%x : tensor<8x512x2x128xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<8x512x2x128xbf16>, tensor<8x128x2x128xbf16>,
          tensor<8x128x2x128xbf16> -> tensor<8x512x2x128xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$query, Fusion_FloatTensor:$key,
                       Fusion_FloatTensor:$value,
                       Optional<Fusion_OffsetsTensor>:$offsets,
                       Optional<Fusion_FloatTensor>:$residual,
                       Fusion_ActivationAttr:$activation, F32Attr:$scale);
  let results = (outs Fusion_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Fusion_GDPAGradOp : Fusion_Op<"gdpa_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "gradient of gdpa";
  let description = [{
    With `s` and `p = act(s)` as in `fusion.gdpa` and the output gradient `do`:

        dv[b,j,h,e] = sum_i p[i, j] * do[b,i,h,e]
        dp[i, j]    = sum_e do[b,i,h,e] * v[b,j,h,e]
        ds[i, j]    = dp[i, j] * act'(s[i, j]) * scale
        dq[b,i,h,d] = sum_j ds[i, j] * k[b,j,h,d]  (+ residual[b,i,h,d])
        dk[b,j,h,d] = sum_i ds[i, j] * q[b,i,h,d]

    Shapes and jagged layout as in `fusion.gdpa`; `dq`, `dk`, `dv` have the
    types of `q`, `k`, `v`. Arithmetic is f32; each gradient is rounded once
    to its element type.

    The optional `residual` (the shape of `q`) is a gradient that reaches q
    by another path, added to `dq` in f32 before the rounding: in a block
    `h = gdpa(x, k, v) + x` the gradient of x is `dh + dq`, so `dh` is the
    residual (`fusion-plan-kernels` folds such a `fusion.add` into the op).
    With jagged q, the tokens outside every sequence get `dq = residual`
    (the sum has no term).

    Example:
    ```mlir
    %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
        {activation = #fusion.activation<silu>, scale = 0.125 : f32}
        : tensor<2x64x2x32xf32>, tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>,
          tensor<2x16x2x32xf32>
        -> tensor<2x64x2x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>
    ```

    Example (jagged q, the residual connection's gradient added to dq):
    ```mlir
    %dq, %dk, %dv = fusion.gdpa_grad %do, %q, %k, %v
        offsets(%off : tensor<9xi32>) residual(%do : tensor<2048x2x128xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<2048x2x128xbf16>, tensor<2048x2x128xbf16>,
          tensor<8x128x2x128xbf16>, tensor<8x128x2x128xbf16>
        -> tensor<2048x2x128xbf16>, tensor<8x128x2x128xbf16>,
           tensor<8x128x2x128xbf16>
    ```

    With `rms_norm_grad(%x, %rstd)`, an RMSNorm gradient prologue: `grad` is
    the gradient of `rms_norm(x)` over the H * Dv values of each token (with
    the weight `rms_weight` [H * Dv] if given, and the saved `rstd`, one f32
    per token), and the output gradient the formulas above read is

        g      = grad * rms_weight,  x_hat = x * rstd       (per token)
        do     = rstd * (g - x_hat * mean_{H * Dv}(g * x_hat))

    (`fusion.rms_norm_grad`'s dx); with `rms_weight` the op has one more
    result, its gradient sum_tokens grad * x_hat (f32, [H * Dv]). `do` is
    computed in f32 and rounded once to grad's element type before the
    formulas above read it, as the unfused program's rms_norm_grad writes
    its dx (and as the kernel feeds its MMAs): the fused op computes what
    `rms_norm_grad` -> `tensor.expand_shape` -> `gdpa_grad` of one element
    type computes. `grad_residual` adds that rounded `do` to `dq` in f32
    before dq's rounding (as `residual(%do)` would, for the block
    `h = gdpa(x, k, v) + x` whose `h` is normed; D = Dv; without the
    prologue it adds `grad`, as `residual(%grad)` would). The passes
    fold a `fusion.rms_norm_grad` feeding a gdpa_grad into it where the
    target has the kernel (fusion-plan-kernels).

    Example (the Kunlun block's backward between its norms):
    ```mlir
    %dq, %dk, %dv, %drw = fusion.gdpa_grad %dout, %lnq, %k, %v
        rms_norm_grad(%h, %rstd : tensor<8x512x2x128xbf16>, tensor<8x512xf32>)
        rms_weight(%w : tensor<256xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32,
         grad_residual}
        : tensor<8x512x2x128xbf16>, tensor<8x512x2x128xbf16>,
          tensor<8x128x2x128xbf16>, tensor<8x128x2x128xbf16>
        -> tensor<8x512x2x128xbf16>, tensor<8x128x2x128xbf16>,
           tensor<8x128x2x128xbf16>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$grad, Fusion_FloatTensor:$query,
                       Fusion_FloatTensor:$key, Fusion_FloatTensor:$value,
                       Optional<Fusion_OffsetsTensor>:$offsets,
                       Optional<Fusion_FloatTensor>:$residual,
                       Optional<Fusion_FloatTensor>:$rms_input,
                       Optional<Fusion_F32Tensor>:$rms_rstd,
                       Optional<Fusion_FloatTensor>:$rms_weight,
                       Fusion_ActivationAttr:$activation, F32Attr:$scale,
                       UnitAttr:$grad_residual);
  let results = (outs Fusion_FloatTensor:$query_grad,
                      Fusion_FloatTensor:$key_grad,
                      Fusion_FloatTensor:$value_grad,
                      Variadic<Fusion_F32Tensor>:$param_grads);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value
    (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    (`rms_norm_grad` `(` $rms_input^ `,` $rms_rstd `:` type($rms_input) `,`
       type($rms_rstd) `)`)?
    (`rms_weight` `(` $rms_weight^ `:` type($rms_weight) `)`)? attr-dict
    `:` type($grad) `,` type($query) `,` type($key) `,` type($value)
    `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
    (`,` type($param_grads)^)?
  }];
  let extraClassDeclaration = [{
    /// Whether the op computes its output gradient from an RMSNorm's.
    bool hasRmsPrologue() { return static_cast<bool>(getRmsInput()); }
    /// The gradient of rms_weight, or null.
    Value getRmsWeightGrad() {
      return getParamGrads().empty() ? Value() : getParamGrads()[0];
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// L1: fused ops
//===----------------------------------------------------------------------===//

def Fusion_FusedMatmulOp : Fusion_Op<"fused_matmul",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "matmul with a fused normalization prologue and/or epilogue";
  let description = [{
    The output of the fusion passes for one GEMM and the norm beside it. With
    `A` = `lhs` [M, K] and `B` = `rhs` [K, N] (`lhs` is [K, M] when
    `transpose_lhs` is set, as in a weight gradient `dy^T x`; `rhs` is [N, K]
    when `transpose_rhs` is set), all in f32:

        acc = A @ B
        prologue rms_norm:   r_i = 1/sqrt(sum_k A[i,k]^2 / K + prologue_epsilon)
                             acc = r * acc                       (Lazy Pre-Norm)
        prologue layer_norm: m_i = mean_k A[i,k],
                             r_i = 1/sqrt(mean_k (A[i,k] - m_i)^2 + prologue_epsilon)
                             acc = r * (acc - m colsum(B))
        epilogue row_scale:  acc = row_scale * acc               (row_scale [M])
        acc = acc * col_scale                                    (col_scale [N])
        acc += col_bias                                          (col_bias [N])

    so the prologues compute `norm(A) @ B` without an affine transform (a
    prologue normalizes A's rows, so it takes no `transpose_lhs`; the
    fusion passes fold a norm weight g into `B` as diag(g) B and a LayerNorm
    bias beta into `col_bias` as beta B). `colsum(B)_j = sum_k B[k,j]` is
    computed from `rhs` unless the optional `col_sum` operand (f32 [N], only
    with prologue `layer_norm`) gives it: then `col_sum` is used as is, and
    must hold the column sums of `rhs` (the GPU kernel reads them instead of
    summing B in every CTA; `fusion-plan-kernels` computes them once per
    call, or at compile time for a constant B). Then the epilogue:

    | epilogue          | output                                               | extra results |
    |-------------------|------------------------------------------------------|---------------|
    | `none`, `row_scale` | acc + residual                                     | none |
    | `rms_norm`        | rms_norm(acc + residual, norm_weight, epsilon)       | rstd [M] with `save_stats` |
    | `layer_norm`      | layer_norm(acc + residual, norm_weight, norm_bias, epsilon) | mean, rstd [M] with `save_stats` |
    | `rms_norm_grad`   | rms_norm_grad(acc, norm_input, rstd, norm_weight) + residual | dweight [N] with `norm_weight` |
    | `layer_norm_grad` | layer_norm_grad(acc, norm_input, mean, rstd, norm_weight) + residual | dweight with `norm_weight`, then dbias with `with_bias_grad` |

    `col_scale` (epilogues `none` and `row_scale`, without an activation or
    a rope) scales each output column: a training step whose norm weight g
    was folded into the next layer (`fusion-fold-norm-weight`) gets that
    layer's weight gradient as `dW = (dy^T x_hat) diag(g)`, one rounding.

    With `activation` (epilogues `none` and `row_scale`, no residual) the
    output is `act(acc)`, the activation of an MLP's first layer (GPT-2's
    `gelu(fc1(x))`, with fc1's bias in `col_bias`). With `up` as well (an
    operand of rhs's type: a second weight over the same A) the output is
    the gated product of Llama's, Mistral's, Qwen's and Gemma's MLP:

        output = act(acc) * acc_up,   acc_up = A @ UP   (UP = up, or up^T
                                                         with transpose_rhs)

    with acc_up scaled by the prologue and row_scale as acc is (no
    col_bias with `up`): `silu(gate(x)) * up(x)` as one GEMM that writes
    [M, N] once.

    With `rope(cos, sin)` (epilogues `none` and `row_scale`, no residual,
    activation or up; `rope_head_dim` D) the output is `fusion.rope` of acc:
    each head of D columns rotated by the tables [T, R] of row m mod T (T
    divides M: [L, R] serves B x L tokens), `rope_interleaved` GPT-J's pairs.
    A q or k projection and its rotary embedding as one GEMM (Llama's
    `q_proj` after its RMSNorm, Qwen2's with its bias).

    The forward norms follow `fusion.rms_norm` / `fusion.layer_norm` exactly
    (post-norm: the residual enters the norm). With `post_residual` (forward
    norm epilogues only, [M, N] like the output) the norm's output, after its
    weight and bias, gets one more addend before the one rounding:

        output = norm(acc + residual) + post_residual

    the residual stream of a sandwich norm, `x + norm(o_proj(a))` in Gemma 2
    and 3 and OLMo 2, where the norm follows the projection and the stream
    adds its output. In the grad epilogues `acc` is
    the incoming gradient `dh` (the dgrad GEMM `dy @ W^T`), `norm_input` and
    the statistics come from the forward, and `residual` is the gradient
    arriving along the skip connection, added to the result.

    With `row_dot` (grad epilogues with `norm_weight`, A not transposed, no
    prologue), the row sums of the norm gradient, `sum_j a[i,j] x_hat[i,j]`
    and (LayerNorm) `sum_j a[i,j]` with a = dh * norm_weight, are taken
    instead as

        sum_k A[i,k] (row_dot[i,k] - row_dot_shift[k])   (row_dot [M, K])
        sum_k A[i,k] row_dot_sum[k]                      (layer_norm_grad)

    (`row_dot_shift` [K] optional, 0 without it; `row_dot_sum` [K] required
    with `layer_norm_grad`). The two are equal when `row_dot` is the output
    of the layer after the norm, `y = z B^T + c` with z = x_hat * w (+ beta)
    the norm's output and B this op's rhs (that layer's weight: its dgrad
    `dh = dy @ B` sees the same B), `row_dot_shift` is `c + beta B^T` and
    `row_dot_sum` is `w B^T`: `<dy_i B, z_i - beta> = <dy_i, y_i - c - beta B^T>`
    and `<dy_i B, w> = <dy_i, w B^T>`. Backward regrouping gives them so, and
    then the row sums span K (the columns of A, which every CTA of a row
    block streams) instead of N (the columns of dh, which span CTAs): the
    kernel needs no row exchange, for any N.

    With `normalized_input`, `norm_input` holds the forward's normalized
    value `x_hat` (before any affine weight) instead of its input `x`: the
    grad epilogue then uses it as `x_hat` directly and needs no `mean`. This is
    the form backward regrouping produces from a weightless forward norm, whose
    output is `x_hat` (`docs/SEED.md` section 6.4).

    The output is rounded once, to its element type; extra results are f32.

    With `norm_group_size` G (forward norm epilogues only) the norm runs over
    each group of G consecutive columns on its own instead of the whole row:
    the per-head norm of Qwen3's and Gemma 3's q_norm / k_norm, whose
    projection's N = H x G columns are H heads of G. Row i's group g is
    normalized with its own statistics, `norm_weight` and `norm_bias` are
    [G] (shared by the groups, as the per-head norm's are), and the
    statistics are [M, N / G]:

        y[i, gG + c] = norm(t[i, gG : (g+1)G])[c]   (t = acc + residual)

    which is the unfused `fusion.rms_norm` / `fusion.layer_norm` of
    `tensor.expand_shape` t [M, N] -> [M, N / G, G], collapsed back.

    With `save_norm_input` (forward norm epilogues only) the op also returns
    the norm's input `acc + residual` as `saved_norm_input`, of the output's
    type, rounded once to its element type: the value the unfused program
    stores when the GEMM result (or the residual sum) has users besides the
    norm, e.g. a training step's `rms_norm_grad`, which reads it back. The
    norm and its statistics are still computed from the f32 `acc + residual`,
    not from the rounded copy, so a norm recomputed from `saved_norm_input`
    (as the backward does) matches them to bf16 rounding noise (one rounding
    of each element, about 2^-9 relative, averaged over the row).

    | results, in order | when |
    |-------------------|------|
    | `output`          | always |
    | `saved_norm_input` | `save_norm_input` |
    | `extras`          | as the epilogue table above says |

    Example (OLMo 2's post-attention norm and its residual stream,
    h = x + rms_norm(o_proj(a))):
    ```mlir
    %h = fusion.fused_matmul %a, %wo norm_weight(%g : tensor<4096xbf16>)
        post_residual(%x : tensor<?x4096xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```

    Example (Llama's gated MLP's first half, silu(x W_gate^T) * (x W_up^T),
    after its RMSNorm moved into the prologue by Lazy Pre-Norm):
    ```mlir
    %h = fusion.fused_matmul %x, %wg up(%wu : tensor<11008x4096xbf16>)
        {activation = #fusion.activation<silu>, prologue = #fusion.prologue<rms_norm>,
         prologue_epsilon = 1.0e-05 : f32, transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    ```

    Example (GEMM + RMSNorm epilogue with saved rstd):
    ```mlir
    %y, %rstd = fusion.fused_matmul %a, %b
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
        : tensor<8192x512xbf16>, tensor<512x512xbf16>
        -> tensor<8192x512xbf16>, tensor<8192xf32>
    ```

    Example (a per-head RMSNorm of a projection's 16 heads of 128, as Qwen3's
    q_proj then q_norm):
    ```mlir
    %q, %rstd = fusion.fused_matmul %x, %wq norm_weight(%g : tensor<128xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32,
         norm_group_size = 128 : i64, save_stats, transpose_rhs}
        : tensor<?x2048xbf16>, tensor<2048x2048xbf16>
        -> tensor<?x2048xbf16>, tensor<?x16xf32>
    ```

    Example (a training step's forward: the norm's input h = x W^T is kept
    for the backward beside the normalized output and rstd):
    ```mlir
    %y, %h, %rstd = fusion.fused_matmul %x, %w norm_weight(%g : tensor<1024xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32,
         save_norm_input, save_stats, transpose_rhs}
        : tensor<8192x1024xbf16>, tensor<1024x1024xbf16>
        -> tensor<8192x1024xbf16> saved_norm_input(tensor<8192x1024xbf16>),
           tensor<8192xf32>
    ```

    Example (backward regrouping of a Llama pre-norm's RMSNorm: dh = dy W2
    with its gradient in the epilogue, the row sum from the next layer's
    output y = z W2^T):
    ```mlir
    %dx, %dg = fusion.fused_matmul %dy, %w2 norm_weight(%g : tensor<1024xbf16>)
        norm_input(%h : tensor<8192x1024xbf16>) rstd(%rstd : tensor<8192xf32>)
        row_dot(%y : tensor<8192x1024xbf16>)
        {epilogue = #fusion.epilogue<rms_norm_grad>}
        : tensor<8192x1024xbf16>, tensor<1024x1024xbf16>
        -> tensor<8192x1024xbf16>, tensor<1024xf32>
    ```

    Example (Lazy Pre-Norm LayerNorm prologue, B's column sums given):
    ```mlir
    %y = fusion.fused_matmul %a, %b col_sum(%cs : tensor<512xf32>)
        {prologue = #fusion.prologue<layer_norm>, prologue_epsilon = 1.0e-05 : f32}
        : tensor<8192x1024xbf16>, tensor<1024x512xbf16> -> tensor<8192x512xbf16>
    ```
  }];
  let arguments = (ins
    Fusion_FloatTensor:$lhs, Fusion_FloatTensor:$rhs,
    Optional<Fusion_FloatTensor>:$residual,
    Optional<Fusion_F32Tensor>:$row_scale,
    Optional<Fusion_FloatTensor>:$col_bias,
    Optional<Fusion_FloatTensor>:$col_scale,
    Optional<Fusion_F32Tensor>:$col_sum,
    Optional<Fusion_FloatTensor>:$norm_weight,
    Optional<Fusion_FloatTensor>:$norm_bias,
    Optional<Fusion_FloatTensor>:$norm_input,
    Optional<Fusion_F32Tensor>:$mean,
    Optional<Fusion_F32Tensor>:$rstd,
    Optional<Fusion_FloatTensor>:$row_dot,
    Optional<Fusion_FloatTensor>:$row_dot_shift,
    Optional<Fusion_FloatTensor>:$row_dot_sum,
    Optional<Fusion_FloatTensor>:$post_residual,
    Optional<Fusion_FloatTensor>:$up,
    Optional<Fusion_FloatTensor>:$rope_cos,
    Optional<Fusion_FloatTensor>:$rope_sin,
    DefaultValuedAttr<Fusion_PrologueKindAttr, "PrologueKind::none">:$prologue,
    DefaultValuedAttr<Fusion_EpilogueKindAttr, "EpilogueKind::none">:$epilogue,
    OptionalAttr<F32Attr>:$prologue_epsilon,
    OptionalAttr<F32Attr>:$epsilon,
    OptionalAttr<I64Attr>:$norm_group_size,
    OptionalAttr<Fusion_ActivationAttr>:$activation,
    UnitAttr:$transpose_lhs,
    UnitAttr:$transpose_rhs,
    UnitAttr:$save_stats,
    UnitAttr:$with_bias_grad,
    UnitAttr:$normalized_input,
    UnitAttr:$save_norm_input,
    OptionalAttr<I64Attr>:$rope_head_dim,
    UnitAttr:$rope_interleaved);
  let results = (outs Fusion_FloatTensor:$output,
                      Optional<Fusion_FloatTensor>:$saved_norm_input,
                      Variadic<Fusion_F32Tensor>:$extras);
  let assemblyFormat = [{
    $lhs `,` $rhs
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    (`row_scale` `(` $row_scale^ `:` type($row_scale) `)`)?
    (`col_bias` `(` $col_bias^ `:` type($col_bias) `)`)?
    (`col_scale` `(` $col_scale^ `:` type($col_scale) `)`)?
    (`col_sum` `(` $col_sum^ `:` type($col_sum) `)`)?
    (`norm_weight` `(` $norm_weight^ `:` type($norm_weight) `)`)?
    (`norm_bias` `(` $norm_bias^ `:` type($norm_bias) `)`)?
    (`norm_input` `(` $norm_input^ `:` type($norm_input) `)`)?
    (`mean` `(` $mean^ `:` type($mean) `)`)?
    (`rstd` `(` $rstd^ `:` type($rstd) `)`)?
    (`row_dot` `(` $row_dot^ `:` type($row_dot) `)`)?
    (`row_dot_shift` `(` $row_dot_shift^ `:` type($row_dot_shift) `)`)?
    (`row_dot_sum` `(` $row_dot_sum^ `:` type($row_dot_sum) `)`)?
    (`post_residual` `(` $post_residual^ `:` type($post_residual) `)`)?
    (`up` `(` $up^ `:` type($up) `)`)?
    (`rope` `(` $rope_cos^ `,` $rope_sin `:` type($rope_cos) `,` type($rope_sin) `)`)?
    attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($output)
    (`saved_norm_input` `(` type($saved_norm_input)^ `)`)?
    (`,` type($extras)^)?
  }];
  let extraClassDeclaration = [{
    /// True for the rms_norm_grad and layer_norm_grad epilogues.
    bool isGradEpilogue() {
      return getEpilogue() == EpilogueKind::rms_norm_grad ||
             getEpilogue() == EpilogueKind::layer_norm_grad;
    }
    /// The number of extra results the attributes and operands call for.
    unsigned getExpectedNumExtras();
  }];
  let hasVerifier = 1;
}

def Fusion_NormAttentionOp : Fusion_Op<"norm_attention",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "FlashNormAttention: LayerNorm -> GDPA -> residual -> RMSNorm -> residual";
  let description = [{
    For each token, with both norms over the concatenated H * D vector of all
    its heads (`docs/SEED.md` section 4):

        ln_q = layer_norm(q, ln_weight, ln_bias, ln_epsilon)
        h    = gdpa(ln_q, k, v; activation, scale) + ln_q
        out  = rms_norm(h, rms_weight, rms_epsilon) + q

    The four results are `out` (the type of `q`) and, per token (f32, shape of
    `q` without its two innermost dimensions), the LayerNorm mean and rstd and
    the RMSNorm rstd, saved for the backward. Everything is computed in f32 and
    `out` rounded once. `ln_weight`, `ln_bias`, `rms_weight` are optional,
    shape [H * D]. Layouts as in `fusion.gdpa` (dense or jagged `q`); `v` must
    have the head dimension of `q`.

    Optionally two more results (both or neither), `ln_q` and `h` rounded to
    the type of `q`: the intermediates a backward written with the unfused
    gradient ops (`rms_norm_grad` reads `h`, `gdpa_grad` reads `ln_q`) needs,
    saved by the forward kernel (fusion-form-norm-attention adds them where
    such a backward reads the chain's ln_q and h).

    Example:
    ```mlir
    %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32,
         ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32}
        : tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
        -> tensor<2x128x2x128xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
    ```
    and, saving ln_q and h for a backward of unfused ops:
    ```mlir
    %out, %m, %r, %rr, %lnq, %h = fusion.norm_attention %q, %k, %v {...}
        : tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
        -> tensor<2x128x2x128xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>,
           tensor<2x128x2x128xbf16>, tensor<2x128x2x128xbf16>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$query, Fusion_FloatTensor:$key,
                       Fusion_FloatTensor:$value,
                       Optional<Fusion_OffsetsTensor>:$offsets,
                       Optional<Fusion_FloatTensor>:$ln_weight,
                       Optional<Fusion_FloatTensor>:$ln_bias,
                       Optional<Fusion_FloatTensor>:$rms_weight,
                       Fusion_ActivationAttr:$activation, F32Attr:$scale,
                       F32Attr:$ln_epsilon, F32Attr:$rms_epsilon);
  let results = (outs Fusion_FloatTensor:$output, Fusion_F32Tensor:$ln_mean,
                      Fusion_F32Tensor:$ln_rstd, Fusion_F32Tensor:$rms_rstd,
                      Variadic<Fusion_FloatTensor>:$saved);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`ln_weight` `(` $ln_weight^ `:` type($ln_weight) `)`)?
    (`ln_bias` `(` $ln_bias^ `:` type($ln_bias) `)`)?
    (`rms_weight` `(` $rms_weight^ `:` type($rms_weight) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($output) `,` type($ln_mean) `,` type($ln_rstd) `,` type($rms_rstd)
    (`,` type($saved)^)?
  }];
  let extraClassDeclaration = [{
    /// The saved ln_q and h, or null when the op does not save them.
    Value getSavedLnQuery() { return getSaved().empty() ? Value() : getSaved()[0]; }
    Value getSavedHidden() { return getSaved().empty() ? Value() : getSaved()[1]; }
  }];
  let hasVerifier = 1;
}

def Fusion_NormAttentionGradOp : Fusion_Op<"norm_attention_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "gradient of norm_attention";
  let description = [{
    The backward of `fusion.norm_attention`, from the output gradient `dout`,
    the forward inputs and the saved statistics. `ln_q` is recomputed from `q`
    and the saved LayerNorm mean and rstd, and `h` from `ln_q`:

        dh          = rms_norm_grad(dout, h, rms_rstd, rms_weight)
        dq1, dk, dv = gdpa_grad(dh, ln_q, k, v)
        dq          = layer_norm_grad(dh + dq1, q, ln_mean, ln_rstd, ln_weight) + dout

    with both norms over H * D. Results: `dq`, `dk`, `dv` (the types of `q`,
    `k`, `v`), then the parameter gradients (f32, [H * D]) of the weights
    given, in the order d`ln_weight`, d`ln_bias`, d`rms_weight`. The
    statistics make the epsilons unnecessary.

    Example:
    ```mlir
    %dq, %dk, %dv = fusion.norm_attention_grad %dout, %q, %k, %v, %m, %r, %rr
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>,
          tensor<2x128x2x64xf32>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
        -> tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>, tensor<2x128x2x64xf32>
    ```
  }];
  let arguments = (ins Fusion_FloatTensor:$grad, Fusion_FloatTensor:$query,
                       Fusion_FloatTensor:$key, Fusion_FloatTensor:$value,
                       Fusion_F32Tensor:$ln_mean, Fusion_F32Tensor:$ln_rstd,
                       Fusion_F32Tensor:$rms_rstd,
                       Optional<Fusion_OffsetsTensor>:$offsets,
                       Optional<Fusion_FloatTensor>:$ln_weight,
                       Optional<Fusion_FloatTensor>:$ln_bias,
                       Optional<Fusion_FloatTensor>:$rms_weight,
                       Fusion_ActivationAttr:$activation, F32Attr:$scale);
  let results = (outs Fusion_FloatTensor:$query_grad,
                      Fusion_FloatTensor:$key_grad,
                      Fusion_FloatTensor:$value_grad,
                      Variadic<Fusion_F32Tensor>:$param_grads);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $ln_mean `,` $ln_rstd `,` $rms_rstd
    (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`ln_weight` `(` $ln_weight^ `:` type($ln_weight) `)`)?
    (`ln_bias` `(` $ln_bias^ `:` type($ln_bias) `)`)?
    (`rms_weight` `(` $rms_weight^ `:` type($rms_weight) `)`)?
    attr-dict `:` type($grad) `,` type($query) `,` type($key) `,` type($value)
    `,` type($ln_mean) `,` type($ln_rstd) `,` type($rms_rstd)
    `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
    (`,` type($param_grads)^)?
  }];
  let hasVerifier = 1;
}

#endif // FUSION_DIALECT_FUSION_IR_FUSIONOPS_TD
