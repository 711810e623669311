//===- Passes.td - fusion transform passes -----------------*- tablegen -*-===//
//
// The passes that rewrite within the fusion dialect: raising from linalg, the
// fusion decisions that turn L0 ops into the L1 fused ops, and kernel planning
// (L1 -> L2). Alphabetical.
// Each pass is a thin wrapper over a function in Transforms.h.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_TRANSFORMS_PASSES
#define FUSION_DIALECT_FUSION_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FusionEpilogueNorm
//===----------------------------------------------------------------------===//

def FusionRopeEpiloguePass
    : Pass<"fusion-rope-epilogue", "::mlir::ModuleOp"> {
  let summary = "fold a q or k projection's rotary embedding into its GEMM";
  let description = [{
    Rewrites `fusion.rope` of a 2-D GEMM result (its only use; a
    `fusion.matmul`, its bias becoming `col_bias`, or a
    `fusion.fused_matmul` whose epilogue is `none` or `row_scale` with no
    residual, activation or up) into the GEMM's epilogue:
    `fusion.fused_matmul` with `rope(cos, sin)`, so that q_proj (after
    Lazy Pre-Norm's RMSNorm) and its rotary embedding are one GEMM that
    writes q once. The rotation is applied to the f32 accumulator and
    rounded once. On a module with a `fusion.target`, only a rope that
    target's GEMM kernel can rotate is folded (sm_90a: a rotary dimension
    that is a multiple of 16, of 8 for interleaved pairs, and tiles of
    whole heads at most 256 wide); the others stay, with a remark, and run
    as a row kernel. In `fusion-fuse` by default (`rope-epilogue=false`,
    `fusion-compile --no-rope-epilogue`, leaves every rope a row kernel);
    the sm_90a kernel ran on an H100 in session 49.

    Example:
    ```mlir
    %q = fusion.matmul %x, %wq {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    %r = fusion.rope %q, %cos, %sin {head_dim = 128 : i64}
        : tensor<?x4096xbf16>, tensor<?x128xbf16> -> tensor<?x4096xbf16>
    ```
    becomes
    ```mlir
    %r = fusion.fused_matmul %x, %wq
        rope(%cos, %sin : tensor<?x128xbf16>, tensor<?x128xbf16>)
        {rope_head_dim = 128 : i64, transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark on every fusion.rope: folded, or why not">
  ];
}

def FusionActivationEpiloguePass
    : Pass<"fusion-activation-epilogue", "::mlir::ModuleOp"> {
  let summary = "fold an MLP's activation, and its gated product, into the first GEMM";
  let description = [{
    Rewrites `fusion.activation` of a GEMM's result (a `fusion.matmul`, its
    bias becoming `col_bias`, or a `fusion.fused_matmul` whose epilogue is
    `none` or `row_scale` with no residual) into the GEMM's epilogue:
    `fusion.fused_matmul` with `activation`, GPT-2's and BERT's
    `gelu(fc1(x))` as one kernel. When the activation's only user multiplies
    it with a second GEMM's result over the same A (the gated MLP of Llama,
    Mistral, Qwen, Gemma and OLMo: `silu(gate(x)) * up(x)`), with the same
    prologue and row scale, weights of one type and no bias, the two GEMMs
    and the product become one `fusion.fused_matmul` with `up`: one kernel
    whose tiles hold both weights' columns, writing the [M, N] product once
    instead of four [M, N] tensors (two GEMM outputs, the activation's and
    the product's) and reading three back. Each GEMM result must have no
    other user. `fusion-fuse` runs it after Lazy Pre-Norm, so that the
    RMSNorm before a gated MLP is already in both GEMMs' prologue (its
    weight folded into each weight).

    Example:
    ```mlir
    %g = fusion.matmul %x, %wg {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    %u = fusion.matmul %x, %wu {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    %a = fusion.activation %g {activation = #fusion.activation<silu>}
        : tensor<?x11008xbf16>
    %h = fusion.mul %a, %u : tensor<?x11008xbf16>
    ```
    becomes
    ```mlir
    %h = fusion.fused_matmul %x, %wg up(%wu : tensor<11008x4096xbf16>)
        {activation = #fusion.activation<silu>, transpose_rhs}
        : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
    ```
    and GPT-2's first MLP layer
    ```mlir
    %h = fusion.matmul %x, %w1 bias(%b1 : tensor<3072xbf16>) {transpose_rhs}
        : tensor<?x768xbf16>, tensor<3072x768xbf16> -> tensor<?x3072xbf16>
    %a = fusion.activation %h {activation = #fusion.activation<gelu_tanh>}
        : tensor<?x3072xbf16>
    ```
    becomes
    ```mlir
    %a = fusion.fused_matmul %x, %w1 col_bias(%b1 : tensor<3072xbf16>)
        {activation = #fusion.activation<gelu_tanh>, transpose_rhs}
        : tensor<?x768xbf16>, tensor<3072x768xbf16> -> tensor<?x3072xbf16>
    ```
    The activation is applied to the f32 accumulator and the product
    rounded once, where the unfused program rounds the GEMMs' outputs and
    the activation's too.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark on every fusion.activation: what it was folded "
           "into, or why not">
  ];
}

def FusionEpilogueNormPass : Pass<"fusion-epilogue-norm", "::mlir::ModuleOp"> {
  let summary = "fuse a post-norm into the epilogue of the GEMM that produces its input";
  let description = [{
    Rewrites `norm(A @ B [+ bias] [+ residual])`, with `norm` a
    `fusion.rms_norm` or `fusion.layer_norm` over the GEMM's N dimension, into
    one `fusion.fused_matmul` with a norm epilogue (naive epilogue fusion and
    multi-CTA epilogue norm, `docs/SEED.md` sections 1 and 3). The matmul's
    bias (nn.Linear's) becomes `col_bias`, added to the f32 accumulator before
    the residual: the BERT post-norm `layer_norm(x @ W^T + b + residual)` is
    one kernel. The norm's statistics become extra results (`save_stats`)
    when they have users. When the norm's input (the GEMM result, or the
    residual sum) has other users, as in a training step whose backward
    reads h, the fused op also returns it (`save_norm_input`, rounded to the
    output's type as the unfused program stores it) and they read that: one
    more store in the epilogue instead of a norm kernel re-reading h. The
    fused op then goes at the norm when the other users follow it, else
    right after the GEMM; a GEMM result that has users besides its residual
    add is not fused (they need it without the residual).

    Whether a row fits is decided from the module's target: when N is at most
    the widest accumulator slice one CTA holds (256 columns on sm_90a, 512 on
    sm_100a) the row is normalized inside one CTA; when at most 4 CTAs hold
    it on sm_90a (16 on sm_100a), a cluster of C CTAs along N shares the row
    and exchanges partial sums through distributed shared memory: C is the
    smallest power of two whose CTAs hold the row (GPCs hold those best),
    each CTA owns ceil(N / C) columns rounded up to the tile_n granularity
    (64 on sm_90a, 16 on sm_100a), and CTAs left without a column are
    dropped (N = 576 on sm_90a: 3 CTAs of 192, the last slice may end past
    N). Wider rows, up to 16 CTAs, exchange partial statistics through
    global memory instead, each tile waiting in shared memory until its row
    block's statistics are complete (the H200's GPCs hold clusters of 8 on
    only 120 SMs and of 16 on 112; f32 outputs, whose tiles would not fit
    shared memory, keep the cluster). When N is dynamic or needs more than
    16 CTAs, the ops are left alone.

    Example:
    ```mlir
    %c = fusion.matmul %a, %b : tensor<8192x512xbf16>, tensor<512x1024xbf16>
        -> tensor<8192x1024xbf16>
    %s = fusion.add %c, %r : tensor<8192x1024xbf16>
    %y, %rstd = fusion.rms_norm %s {epsilon = 1.0e-05 : f32}
        : tensor<8192x1024xbf16> -> tensor<8192x1024xbf16>, tensor<8192xf32>
    ```
    becomes
    ```mlir
    %y, %rstd = fusion.fused_matmul %a, %b residual(%r : tensor<8192x1024xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
        : tensor<8192x512xbf16>, tensor<512x1024xbf16>
        -> tensor<8192x1024xbf16>, tensor<8192xf32>
    ```
    (on sm_90a: a cluster of 4 CTAs, 256 columns each). The BERT post-norm,
    a linear with bias, a residual and a LayerNorm with weight and bias:
    ```mlir
    %h = fusion.matmul %x, %w bias(%b : tensor<768xbf16>) {transpose_rhs}
        : tensor<?x3072xbf16>, tensor<768x3072xbf16> -> tensor<?x768xbf16>
    %s = fusion.add %h, %r : tensor<?x768xbf16>
    %y, %mean, %rstd = fusion.layer_norm %s weight(%g : tensor<768xbf16>)
        bias(%beta : tensor<768xbf16>) {epsilon = 1.0e-12 : f32}
        : tensor<?x768xbf16> -> tensor<?x768xbf16>, tensor<?xf32>, tensor<?xf32>
    ```
    becomes
    ```mlir
    %y = fusion.fused_matmul %x, %w residual(%r : tensor<?x768xbf16>)
        col_bias(%b : tensor<768xbf16>) norm_weight(%g : tensor<768xbf16>)
        norm_bias(%beta : tensor<768xbf16>)
        {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-12 : f32, transpose_rhs}
        : tensor<?x3072xbf16>, tensor<768x3072xbf16> -> tensor<?x768xbf16>
    ```
    A bias written as a separate broadcasting `fusion.add` is first folded
    into the matmul by `fusion-raise-linalg` (the first pass of
    `fusion-fuse`).

    A per-head norm (Qwen3's and Gemma 3's q_norm / k_norm: the projection's
    columns unfolded into heads of G by `tensor.expand_shape` [M, N] ->
    [M, N / G, G], each head normalized over its G with a weight [G]) fuses
    over column groups (`norm_group_size`): on sm_90a each CTA's tile holds
    whole heads (the widest of 64-256 columns that pads N least), so no
    statistics cross CTAs; the norm's users read the fused output through
    the same heads view, and its statistics are [M, N / G]. On sm_100a the
    epilogue warpgroup normalizes the tile's heads one after the other in
    its 64-column chunks (heads of a multiple of 64 columns; others stay
    standalone).
    ```mlir
    %q = fusion.matmul %x, %w {transpose_rhs}
        : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
    %e = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 16, 128]
        : tensor<?x2048xbf16> into tensor<?x16x128xbf16>
    %y = fusion.rms_norm %e weight(%g : tensor<128xbf16>) {epsilon = 1.0e-06 : f32}
        : tensor<?x16x128xbf16> -> tensor<?x16x128xbf16>
    ```
    becomes
    ```mlir
    %o = fusion.fused_matmul %x, %w norm_weight(%g : tensor<128xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32,
         norm_group_size = 128 : i64, transpose_rhs}
        : tensor<?x2048xbf16>, tensor<2048x2048xbf16> -> tensor<?x2048xbf16>
    %y = tensor.expand_shape %o [[0], [1, 2]] output_shape [%t, 16, 128]
        : tensor<?x2048xbf16> into tensor<?x16x128xbf16>
    ```

    #### Input invariants
    - The norm input is a 2-D `fusion.matmul` result without `transpose_lhs`
      (with or without a bias), or a `fusion.add` of such a result and a
      residual, both of the sum's type (not a broadcast operand); the matmul
      (and the add) have no other user. Or, for a per-head norm, the
      `tensor.expand_shape` [M, N] -> [M, N / G, G] (static G) of such a
      value.
    - The module carries `fusion.target`; without it nothing is fused.

    #### Output IR
    `fusion.fused_matmul` with epilogue `rms_norm` or `layer_norm` replaces
    the matmul, the add and the norm; the matmul's bias becomes `col_bias`,
    the norm weight and bias become `norm_weight` / `norm_bias`.

    #### Options
    - `report`: emit a remark on every norm considered, saying what it was
      fused into and with which strategy, or why it was not fused.

    #### Target requirements
    Reads `fusion.target`: sm_90a and sm_100a (thread-block clusters and
    DSMEM for rows wider than one CTA). Leaves the IR unchanged without it.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per norm: what it was fused into, or why not">,
  ];
}

//===----------------------------------------------------------------------===//
// FusionFormNormAttention
//===----------------------------------------------------------------------===//

def FusionFormNormAttentionPass
    : Pass<"fusion-form-norm-attention", "::mlir::ModuleOp"> {
  let summary = "form FlashNormAttention from layer_norm -> gdpa -> add -> rms_norm -> add";
  let description = [{
    Recognizes the Kunlun PFFN block around GDPA (`docs/SEED.md` section 4),

        ln_q = layer_norm(q) over H*D;  h = gdpa(ln_q, k, v) + ln_q;
        out  = rms_norm(h) over H*D + q

    written with `tensor.collapse_shape` / `tensor.expand_shape` between the
    [.., H, D] attention layout and the [.., H*D] norm layout, and replaces it
    with one `fusion.norm_attention` (the FlashNormAttention kernel). The
    matching backward chain (rms_norm_grad, gdpa_grad, add, layer_norm_grad,
    add) becomes `fusion.norm_attention_grad`.

    Example:
    ```mlir
    %qf = tensor.collapse_shape %q [[0], [1], [2, 3]] : tensor<2x128x2x64xbf16> into tensor<2x128x128xbf16>
    %lnf, %m, %r = fusion.layer_norm %qf {epsilon = 1.0e-05 : f32} : ...
    %ln = tensor.expand_shape %lnf [[0], [1], [2, 3]] output_shape [2, 128, 2, 64] : ...
    %a = fusion.gdpa %ln, %k, %v {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32} : ...
    %h = fusion.add %a, %ln : tensor<2x128x2x64xbf16>
    ... rms_norm over the collapsed %h, expand, fusion.add %y, %q
    ```
    becomes
    ```mlir
    %out, %m, %r, %rr = fusion.norm_attention %q, %k, %v
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32,
         ln_epsilon = 1.0e-05 : f32, rms_epsilon = 1.0e-05 : f32} : ...
    ```

    #### Input invariants
    - Each intermediate value of the chain has exactly the users the chain
      gives it, except the statistics (they become results) and ln_q, h and
      their collapses: where a backward that is not formed with the forward,
      or anything else, reads ln_q or h, the forward saves them (two more
      results of `fusion.norm_attention`) and the readers take those.
    - Both norms run over the collapsed H*D dimension of the same tokens.

    #### Output IR
    `fusion.norm_attention` (and `fusion.norm_attention_grad`) replace the
    chains; reshapes and L0 ops of the chain disappear. A training step whose
    backward stays as its ops (no kernel for the fused backward):
    ```mlir
    %out, %m, %r, %rr, %saved:2 = fusion.norm_attention %q, %k, %v ... -> ...,
        tensor<BxLx2x128xbf16>, tensor<BxLx2x128xbf16>
    %hf = tensor.collapse_shape %saved#1 ...
    %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr ...
    %dq1, %dk, %dv = fusion.gdpa_grad %dh, %saved#0, %k, %v ...
    ```

    #### Options
    - `report`: emit a remark per gdpa considered.
    - `apply` (default true): rewrite (`fusion-fuse{norm-attention=false}`
      runs the pass with `apply=false`: a block that would be formed is
      reported as not formed, and why).

    #### Target requirements
    With a `fusion.target`, a block is formed only where the target's
    FlashNormAttention kernel takes it (`whyNoNormAttentionKernel`,
    `fusion/Target/NVPTX/AttentionKernelLimits.h`: dense or jagged bf16/f16
    q, H <= 4 heads in a cluster, D = 64 or 128, L_kv <= D; saving ln_q and
    h: dense q), and a block with its backward only where a kernel
    takes `fusion.norm_attention_grad` (`whyNoNormAttentionGradKernel`: none
    yet; there the forward is formed saving ln_q and h, and the backward
    runs as its grad ops); elsewhere the block stays as its ops
    (`fusion.layer_norm`, `fusion.gdpa`, `fusion.add`, `fusion.rms_norm`, and
    the backward's grad ops and adds), which have kernels, and the remark
    says why. Without a target every matching block is formed (the CPU
    pipeline runs `fusion.norm_attention` by its reference lowering).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per gdpa: formed, or why not">,
    Option<"apply", "apply", "bool", /*default=*/"true",
           "rewrite (false: only the remarks)">,
  ];
}

//===----------------------------------------------------------------------===//
// FusionLazyPrenorm
//===----------------------------------------------------------------------===//

def FusionLazyPrenormPass : Pass<"fusion-lazy-prenorm", "::mlir::ModuleOp"> {
  let summary = "fuse a pre-norm into the GEMMs that consume it (Lazy Pre-Norm)";
  let description = [{
    Rewrites `rms_norm(A) @ B` into a `fusion.fused_matmul` with the lazy
    `rms_norm` prologue (`docs/SEED.md` section 2): the kernel accumulates the
    sum of squares of A's rows while A streams through shared memory for the
    MMA, and scales the accumulator rows by rstd after the K loop, since
    diag(rstd) (A @ B) = (diag(rstd) A) @ B.

    Beyond the reference: an affine weight g is folded into B as diag(g) B —
    at compile time when both are constants, otherwise by a `fusion.mul` that
    scales B's K dimension (weights only: cheap, one device step per call,
    and hoistable out of a training step). With `layer-norm`, LayerNorm is
    deferred too: layer_norm(A) @ B = r (A @ B - m colsum(B)), with its weight
    folded into B and its bias into `col_bias` as beta B (the product of the
    unfolded B; a constant when beta and B are). A consuming matmul's own
    bias (nn.Linear's) joins `col_bias`.

    Every matmul that consumes the normalized tensor as its left operand gets
    its own fused op. An RMSNorm also rides into a `fusion.fused_matmul`
    that `fusion-epilogue-norm` (which runs first in `fusion-fuse`) made of
    such a matmul and the norm after it, keeping that epilogue: a decoder
    layer's input norm before q_proj / k_proj with their per-head q_norm /
    k_norm (Qwen3, Gemma 3), or before a post-norm. The norm is fused only
    when it disappears: all its users are such GEMMs and its statistics are
    unused.

    Example:
    ```mlir
    %n = fusion.rms_norm %x {epsilon = 1.0e-06 : f32}
        : tensor<65536x512xbf16> -> tensor<65536x512xbf16>
    %c = fusion.matmul %n, %b : tensor<65536x512xbf16>, tensor<512x1024xbf16>
        -> tensor<65536x1024xbf16>
    ```
    becomes
    ```mlir
    %c = fusion.fused_matmul %x, %b
        {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
        : tensor<65536x512xbf16>, tensor<512x1024xbf16> -> tensor<65536x1024xbf16>
    ```
    The weight fold, for nn.Linear's weight `%w` [N, K] (`transpose_rhs`):
    g broadcasts over the rows of `%w`, no reshape:
    ```mlir
    %wg = fusion.mul %w, %g : tensor<1024x512xbf16>, tensor<512xbf16>
    %c = fusion.fused_matmul %x, %wg {prologue = ..., transpose_rhs} : ...
    ```
    and for B [K, N], g as a column [K, 1]:
    ```mlir
    %gcol = tensor.expand_shape %g [[0, 1]] output_shape [512, 1]
        : tensor<512xbf16> into tensor<512x1xbf16>
    %bg = fusion.mul %b, %gcol : tensor<512x1024xbf16>, tensor<512x1xbf16>
    ```
    A LayerNorm bias `%beta` before a linear with bias `%bias` (layer-norm=true):
    ```mlir
    %row = tensor.expand_shape %beta [[0, 1]] output_shape [1, 512]
        : tensor<512xbf16> into tensor<1x512xbf16>
    %bb = fusion.matmul %row, %w {transpose_rhs}
        : tensor<1x512xbf16>, tensor<1024x512xbf16> -> tensor<1x1024xf32>
    %bbv = tensor.collapse_shape %bb [[0, 1]] : tensor<1x1024xf32> into tensor<1024xf32>
    %cb = fusion.add %bbv, %bias : tensor<1024xf32>, tensor<1024xbf16>
    %c = fusion.fused_matmul %x, %wg col_bias(%cb : tensor<1024xf32>)
        {prologue = #fusion.prologue<layer_norm>, ..., transpose_rhs} : ...
    ```

    #### Input invariants
    - The norm input is 2-D [M, K]; each user is a `fusion.matmul` taking
      the norm output as `lhs` without `transpose_lhs`, or (RMSNorm) a
      `fusion.fused_matmul` taking it as `lhs` only, without a prologue or
      `transpose_lhs`, with an `rms_norm` / `layer_norm` epilogue.

    #### Output IR
    One `fusion.fused_matmul` per consuming matmul; the norm and the matmuls
    disappear. With a weight: an `arith.constant` (folded) or a `fusion.mul`
    computing diag(g) B (after a `tensor.expand_shape` of g to [K, 1] when B
    is [K, N]). With a LayerNorm bias: an f32 `arith.constant` or a
    `fusion.matmul` of beta as [1, K] (`tensor.expand_shape`) with B,
    `tensor.collapse_shape`d to [N], and a `fusion.add` of the matmul's bias
    when it has one. The matmul's bias alone is `col_bias` as it is.

    #### Options
    - `layer-norm`: also defer LayerNorm (off by default: the kernel's
      one-pass variance loses accuracy when |mean| >> std; see the test
      `lazy-prenorm-layer-norm-accuracy.mlir`).
    - `report`: emit a remark per norm: fused into how many GEMMs, or why not.

    #### Target requirements
    None: any GEMM can carry the prologue.
  }];
  let options = [
    Option<"layerNorm", "layer-norm", "bool", /*default=*/"false",
           "also defer LayerNorm through the mean/colsum(B) correction">,
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per norm: what it was fused into, or why not">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// FusionOutlineWeightPrep
//===----------------------------------------------------------------------===//

def FusionOutlineWeightPrepPass
    : Pass<"fusion-outline-weight-prep", "::mlir::ModuleOp"> {
  let summary = "move what a function computes from its weights alone into "
                "a function of its own, run once per weight version";
  let description = [{
    Lazy Pre-Norm folds a norm's weight into the GEMM's B (`diag(g) W`) and a
    LayerNorm bias into `col_bias` (`beta W`). Where the weights are
    arguments, those are device steps on every call, although they change
    only when the weights do: for a decode-sized call they read and write
    twice the bytes the GEMM reads. This pass moves them out of the call.

    The caller marks the arguments that are weights with the unit argument
    attribute `fusion.weight`. Every tensor op of the function computed from
    weight arguments (and constants) alone moves into a new function
    `@<f>_prepare`, which takes the weight arguments in their order and
    returns the values the rest of `@f` reads; `@f` receives them as
    arguments appended after its own, each marked `fusion.prepared` with its
    index, and names its preparation in `fusion.prepare`. Views of a weight
    alone (`tensor.expand_shape`, `collapse_shape`, `cast`) stay: they cost
    nothing. The weight arguments stay in `@f`'s signature, used or not, so
    that its ABI is the original's with the prepared values appended.

    The Python front end marks the parameters of an inference partition when
    asked (`fusion_compiler.compile(..., cache_weight_folds=True)`) and calls
    `@f_prepare` again only when a weight's storage or version counter
    changed; `fusion-fuse` runs this pass last, so a program without
    `fusion.weight` arguments is unchanged.

    Example (after `fusion-lazy-prenorm`):
    ```mlir
    func.func @f(%x: tensor<?x2048xbf16>, %g: tensor<2048xbf16> {fusion.weight},
                 %w: tensor<2048x2048xbf16> {fusion.weight}) -> tensor<?x2048xbf16> {
      %wg = fusion.mul %w, %g : tensor<2048x2048xbf16>, tensor<2048xbf16>
      %y = fusion.fused_matmul %x, %wg {prologue = #fusion.prologue<rms_norm>, ...}
      return %y : tensor<?x2048xbf16>
    }
    ```
    becomes
    ```mlir
    func.func @f_prepare(%g: tensor<2048xbf16>, %w: tensor<2048x2048xbf16>)
        -> tensor<2048x2048xbf16> {
      %wg = fusion.mul %w, %g : tensor<2048x2048xbf16>, tensor<2048xbf16>
      return %wg : tensor<2048x2048xbf16>
    }
    func.func @f(%x: tensor<?x2048xbf16>, %g: tensor<2048xbf16> {fusion.weight},
                 %w: tensor<2048x2048xbf16> {fusion.weight},
                 %wg: tensor<2048x2048xbf16> {fusion.prepared = 0 : i64})
        -> tensor<?x2048xbf16> attributes {fusion.prepare = @f_prepare} {
      %y = fusion.fused_matmul %x, %wg {prologue = #fusion.prologue<rms_norm>, ...}
      return %y : tensor<?x2048xbf16>
    }
    ```

    #### Input invariants
    - Functions of one block; only ops without regions or memory effects,
      with ranked tensor results, move.

    #### Output IR
    As above. A function is left as it is (a remark with `report`) when a
    weight-only value is returned, or when `@<f>_prepare` already exists.

    #### Options
    - `report`: emit a remark per function outlined or left.

    #### Target requirements
    None.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per function outlined or left as it is">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// FusionPlanKernels
//===----------------------------------------------------------------------===//

def FusionPlanKernelsPass : Pass<"fusion-plan-kernels", "::mlir::ModuleOp"> {
  let summary = "choose the GPU kernel configuration of every GEMM for the module's target";
  let description = [{
    Kernel planning, L1 -> L2 (`docs/design.md`, "Layers" and "Kernel
    designs"): attaches to every `fusion.fused_matmul` the configuration of
    its warp-specialized GEMM kernel on the module's target, as the
    discardable attribute `fusion.kernel = #fusion.kernel_config<...>` that
    `convert-fusion-to-gpu` reads. Every remaining plain `fusion.matmul` first
    becomes a `fusion.fused_matmul` without prologue or epilogue, its bias
    (if any) as `col_bias` (one kernel family covers both), then is planned.
    Standalone `fusion.rms_norm`, `fusion.layer_norm`, `fusion.add` and
    `fusion.mul` are left as they are: `convert-fusion-to-gpu` gives them row
    kernels of their own, with nothing to plan. Planning is required for
    correctness: what cannot run on the target is refused with an error.

    The rules (`planFusedMatmul` in `Transforms.h`; e = 2 bytes, bf16/f16):
    - `tile_m` = 128: two consumer warpgroups (`consumers` = 2) of 64 rows;
      `tile_k` = 64: a 64-element row is 128 bytes, the 128-byte swizzle.
    - Forward norm (`rms_norm`, `layer_norm`) and grad epilogues reduce over
      the whole row, so the cluster covers it as `fusion-epilogue-norm`
      decided (`planEpilogueNorm`): `cluster_n` CTAs of `tile_n` columns, at
      most 256 per CTA on sm_90a, `tile_n` x `cluster_n` >= N (the last
      CTA's columns past N are masked out of the statistics); or, for rows
      through global memory, `cluster_n` = 1 and `tile_n` = 256 < N.
    - Norm epilogues over column groups (`norm_group_size` G): the widest
      `tile_n` of 64-256 columns, a multiple of G, that pads N least
      (`planGroupedEpilogueNorm`), `cluster_n` = 1, the consumers' register
      epilogue on sm_90a (no epilogue warps), the epilogue warpgroup's
      chunks on sm_100a (G a multiple of 64).
    - `none` and `row_scale` epilogues: `tile_n` = min(256, N rounded up to
      the target's tile_n granularity: 64 on sm_90a, whose kernels stage B in
      64-column boxes; 16 on sm_100a), `cluster_n` = 1.
    - Shared memory: `stages` x (`tile_m` + `tile_n`) x `tile_k` x e (the
      A/B ring) + for 16-bit outputs B x `tile_m` x 64 x 2 (the TMA-store
      staging buffers, B = 2, or 1 with a cluster, or `tile_n` / 64 when
      the norm runs in epilogue warps (sm_90a, 16-bit outputs over several
      CTAs) or a row goes through global memory: the whole tile waits
      there; the epilogue itself works
      on the accumulator registers) + `tile_m` x 4 (Lazy Pre-Norm row sums)
      + for grad epilogues `tile_m` x `tile_n` x e (the norm_input tile) + for
      `cluster_n` > 1, R x 2 x `tile_m` x `cluster_n` x 4 (DSMEM slots of the
      row partials: R = 2 exchange rounds for LayerNorm, 1 otherwise, double-
      buffered by tile parity; for rows through global memory instead
      2 x `tile_m` x 4, the rows' scale and shift) + 1024 (mbarriers, and the
      slack that aligns
      the tiles to 1024 bytes). `stages` is the largest value in
      [2, 6] whose total fits the target's opt-in shared memory per CTA
      (232448 bytes on sm_90a); `smem_bytes` is that total. The kernel is
      persistent (one CTA per SM), so short K loops need no special tiles:
      the producer loads the next tile during this one's epilogue.

    What these formulas admit (checked over a grid of shapes by
    `plan-kernels-grid.mlir`): on sm_90a, all 648 grid shapes (N up to
    4096 = 16 x 256); a 256-column tile with a bf16 output gets 4 stages
    (230912 bytes). On sm_100a a 512-column tile fits with 2 stages.

    Example (sm_90a):
    ```mlir
    %c = fusion.matmul %a, %b : tensor<4096x512xbf16>, tensor<512x1024xbf16>
        -> tensor<4096x1024xbf16>
    %y = fusion.fused_matmul %x, %w
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
        : tensor<4096x512xbf16>, tensor<512x1536xbf16> -> tensor<4096x1536xbf16>
    ```
    becomes
    ```mlir
    %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<
        tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1,
        consumers = 2, smem_bytes = 230912>}
        : tensor<4096x512xbf16>, tensor<512x1024xbf16> -> tensor<4096x1024xbf16>
    %y = fusion.fused_matmul %x, %w
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32,
         fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 192,
         tile_k = 64, stages = 4, cluster_n = 8, consumers = 2,
         smem_bytes = 198144>}
        : tensor<4096x512xbf16>, tensor<512x1536xbf16> -> tensor<4096x1536xbf16>
    ```
    (the row of 1536 columns: a cluster of 8 CTAs, 192 columns each).

    Side kernels (`side-kernels`, on by default; session 51). A GEMM whose
    work units (static output tiles x split_k) are fewer than the SMs, with
    a norm gradient as the next kernel that does not read its result
    (`findSideKernel`: a training step's weight gradient dW2 = dy^T n and
    the norm gradient of dn = dy W2), is paired with it where the cost model
    (per token: the GEMM at 6.0 TFLOP/s an SM, the norm gradient at 3.0
    TB/s alone and 37 GB/s an SM beside it; H100 measurements) expects the
    pair to take at most 7/8 of the two one after the other: the GEMM gets
    the unit attribute `fusion.side_kernel`, and `convert-fusion-to-gpu`
    runs both on side streams beside each other, the GEMM's of the greatest
    priority. A split-K GEMM is planned for `side-sms` fewer SMs (-1, the
    default: a quarter), so that its fewer K ranges leave those SMs to the
    norm gradient. With `report`, a remark gives the decision and the
    expected ratio. At H 1024 on 132 SMs:
    ```mlir
    %dw2 = fusion.matmul %dy, %n {transpose_lhs}
        : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<1024x1024xbf16>
    %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>) ...
    ```
    becomes (96 work units: 36 SMs left to the norm gradient, expected 0.85
    of the two one after the other)
    ```mlir
    %dw2 = fusion.fused_matmul %dy, %n {fusion.kernel = #fusion.kernel_config<
        tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1,
        consumers = 2, smem_bytes = 198144, split_k = 3>, fusion.side_kernel,
        transpose_lhs} ...
    %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>) ...
    ```
    At 512 (0.90) and 2048 (0.96: 128 tiles leave 4 SMs) nothing is paired.

    Decode-sized calls (`small-m`, on by default; 42% less GEMM time at
    16 tokens, within 1% at 65536, bench/results/HISTORY.md session 40).
    A GEMM planned for a dynamic token count gets one plan for every M:
    16 tokens at N = 4096 run 16 CTAs of 256 columns, which read the
    whole weight while most SMs idle. With `small-m`, such a GEMM whose
    `tile_n` is free (no row reduction, cluster, split-K or stream-K) and
    wider than 64 (a per-head norm's: wider than the narrowest tile of
    whole heads, which it then takes), on a target accumulating in registers (sm_90a), also gets
    `fusion.kernel_small_m`: the same op planned with 64-column tiles and the
    deepest ring they fit (`planSmallMFusedMatmul`). `convert-fusion-to-gpu`
    builds one kernel with both bodies, and the host picks the small one when
    the main kernel's tiles, ceil(M / 128) x ceil(N / tile_n), times 2 are at
    most the SMs (on 132 SMs: up to 512 tokens at N = 4096, 2048 at 1024):
    ```mlir
    %y = fusion.matmul %x, %w {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
    becomes
    ```mlir
    %y = fusion.fused_matmul %x, %w {transpose_rhs,
        fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256,
          tile_k = 64, stages = 4, cluster_n = 1, consumers = 2,
          smem_bytes = 230912>,
        fusion.kernel_small_m = #fusion.kernel_config<tile_m = 128,
          tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 2,
          smem_bytes = 181760>}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
    A static M whose main tiles x 2 are at most the SMs is planned with
    the 64-column tiles instead (one body).

    Lazy Pre-Norm's row statistics (`lazy-row-stats`). A `fused_matmul`
    with prologue `rms_norm` and epilogue `none` sums the squares of its A
    rows in the kernel, from the A tiles in shared memory, once per output
    tile: `ceil(N / tile_n)` times per row. Where that is many tiles
    (`lazyRowStatsInKernel`: 12 or more, N >= 3072 at 256 columns), the
    planner instead computes the statistics once, with a stats-only
    `fusion.rms_norm` before the GEMM (its normalized rows are not written),
    and the GEMM applies them as its `row_scale`:
    ```mlir
    %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>,
        prologue_epsilon = 1.0e-05 : f32}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
    becomes
    ```mlir
    %unused, %rstd = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
        : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?xf32>
    %y = fusion.fused_matmul %x, %w row_scale(%rstd : tensor<?xf32>)
        {epilogue = #fusion.epilogue<row_scale>, fusion.kernel = ...}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
    `lazy-row-stats=in-kernel` or `=kernel` forces one form.

    The residual of the attention backward (`foldAttentionResiduals`).
    A `fusion.add` of a `fusion.gdpa_grad`'s query gradient (used by that
    add alone) and a tensor of the same type (no broadcast, either operand
    order, defined before the gdpa_grad) becomes the gdpa_grad's
    `residual`: the backward kernel adds it to dQ in f32 before rounding,
    instead of an add kernel reading both and writing the sum. This is the
    block `h = gdpa(ln_q, k, v) + ln_q`, whose backward adds dh to dq:
    ```mlir
    %dq1, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>,
          tensor<?x128x2x128xbf16>
        -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
    %dlnq = fusion.add %dh, %dq1 : tensor<?x?x2x128xbf16>
    ```
    becomes
    ```mlir
    %dlnq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v
        residual(%dh : tensor<?x?x2x128xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>,
          tensor<?x128x2x128xbf16>
        -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>
    ```
    (dq + dh rounded once instead of twice). Only where the target has an
    attention backward kernel for the gdpa_grad (sm_90a and sm_100a, both
    of which take the residual); otherwise the add stays. It runs after
    `fusion-fuse`, so FlashNormAttention's matcher sees the block's add.

    The RMSNorm gradient before the attention backward (`foldRmsPrologues`,
    with `rms-prologue`). In the Kunlun block's backward, the
    `fusion.rms_norm_grad` of the normed `h` (rows of the H * Dv values of a
    token) gives dh, which a `tensor.expand_shape` views as heads for the
    `fusion.gdpa_grad` (and, after the fold above, its residual). The
    planner folds the norm gradient into the gdpa_grad as its
    RMSNorm-gradient prologue: the attention backward kernel computes dh
    from dy (a cluster of the H heads' CTAs sums each token's row) instead
    of a row kernel writing dh and the attention kernel reading it back:
    ```mlir
    %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]]
        : tensor<?x?x2x64xbf16> into tensor<?x?x128xbf16>
    %hf = tensor.collapse_shape %h [[0], [1], [2, 3]]
        : tensor<?x?x2x64xbf16> into tensor<?x?x128xbf16>
    %dhf, %drw = fusion.rms_norm_grad %doutf, %hf, %rr weight(%w : tensor<128xbf16>)
        : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32>
        -> tensor<?x?x128xbf16>, tensor<128xf32>
    %dh = tensor.expand_shape %dhf [[0], [1], [2, 3]] output_shape [%b, %l, 2, 64]
        : tensor<?x?x128xbf16> into tensor<?x?x2x64xbf16>
    %dlnq, %dk, %dv = fusion.gdpa_grad %dh, %ln, %k, %v
        residual(%dh : tensor<?x?x2x64xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>,
          tensor<?x16x2x64xbf16>
        -> tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
    ```
    becomes
    ```mlir
    %dlnq, %dk, %dv, %drw = fusion.gdpa_grad %dout, %ln, %k, %v
        rms_norm_grad(%h, %rr : tensor<?x?x2x64xbf16>, tensor<?x?xf32>)
        rms_weight(%w : tensor<128xbf16>)
        {activation = #fusion.activation<gelu_tanh>, grad_residual, scale = 1.0 : f32}
        : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>,
          tensor<?x16x2x64xbf16>
        -> tensor<?x?x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>,
           tensor<128xf32>
    ```
    (the collapse_shapes, now unused, stay for the canonicalizer). dy and x
    are the sources of collapse_shapes that the expand_shape undoes where
    they are (as here), else new `tensor.expand_shape`s of them with its
    reassociation and sizes. The values are the unfused program's: the
    prologue rounds dh to dy's element type before the attention reads it
    (`fusion.gdpa_grad`). It folds when the expand_shape splits only the
    rows' innermost dimension, into [H, Dv]; the norm gradient has no
    residual, dy and dx one element type, and dx no other use than the
    expand_shape; dh is used by the gdpa_grad alone, as grad and at most as
    its residual (which becomes `grad_residual`; another residual stays);
    the three are in one block and the weight gradient (which becomes the
    gdpa_grad's fourth result) is not used before the gdpa_grad; and the
    target's attention backward kernel takes the prologue form
    (`whyNoAttentionGradKernel`: sm_90a, dense q, H static from 1 to the
    target's cluster limit; dy, x and the weight of q's 16-bit type).
    Elsewhere (sm_100a, jagged q, no target) the ops stay. It runs after the
    attention backward's residual fold (dh + dq1 is then the residual it
    takes) and before the norm gradients' residual fold.

    A norm gradient's residual. In a residual block's backward the norm's
    input gradient is added to the gradient of the residual branch; the
    planner folds that `fusion.add` into the `fusion.rms_norm_grad` /
    `fusion.layer_norm_grad` as its `residual` operand, so the norm
    gradient's row kernel reads the residual beside dy and writes the sum
    once (one kernel and two full tensor reads and one write fewer; the sum
    is rounded once instead of twice). The add may reach the input gradient
    through `tensor.expand_shape` / `collapse_shape` views (a gradient over
    heads, `[B, L, H * D]` viewed as `[B, L, H, D]`): the other operand is
    reshaped back by the inverse views and the result viewed as before. It
    folds when the input gradient has no other use, the operands have the
    same shape (no broadcast) and the add's result type is the input
    gradient's (of its views); the norm gradient moves down to the add when
    the other operand is computed after it (not when its parameter
    gradients are used in between):
    ```mlir
    %dxf, %dw = fusion.layer_norm_grad %dyf, %xf, %m, %r weight(%w : tensor<128xbf16>)
        : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>,
          tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
    %dx0 = tensor.expand_shape %dxf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64]
        : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
    %dx = fusion.add %dx0, %dout : tensor<2x8x2x64xbf16>
    ```
    becomes
    ```mlir
    %doutf = tensor.collapse_shape %dout [[0], [1], [2, 3]]
        : tensor<2x8x2x64xbf16> into tensor<2x8x128xbf16>
    %dxf, %dw = fusion.layer_norm_grad %dyf, %xf, %m, %r weight(%w : tensor<128xbf16>)
        residual(%doutf : tensor<2x8x128xbf16>)
        : tensor<2x8x128xbf16>, tensor<2x8x128xbf16>, tensor<2x8xf32>,
          tensor<2x8xf32> -> tensor<2x8x128xbf16>, tensor<128xf32>
    %dx = tensor.expand_shape %dxf [[0], [1], [2, 3]] output_shape [2, 8, 2, 64]
        : tensor<2x8x128xbf16> into tensor<2x8x2x64xbf16>
    ```
    This runs after the attention backward's fold (an add that one takes
    is gone), under a target only (without one the CPU runs the reference
    lowering, and nothing is planned); the fusion passes before
    (`fusion-fuse`: FlashNormAttention formation, backward regrouping) see
    the add as the user wrote it.

    The residual after attention (`foldAttentionResiduals`), likewise: a
    `fusion.add` of a `fusion.gdpa`'s output (used by that add alone) and a
    tensor of the same type (no broadcast, either operand order, defined
    before the gdpa) becomes the gdpa's `residual`, which its kernel adds to
    O in f32 before rounding. This is the forward of that block where
    `fusion-fuse` leaves it unfused (in the training step, whose backward
    reads ln_q and h):
    ```mlir
    %a = fusion.gdpa %ln, %k, %v
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>,
          tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
    %h = fusion.add %a, %ln : tensor<?x?x2x128xbf16>
    ```
    becomes
    ```mlir
    %h = fusion.gdpa %ln, %k, %v residual(%ln : tensor<?x?x2x128xbf16>)
        {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
        : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>,
          tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>
    ```
    (attention + ln_q rounded once instead of twice; with jagged q, tokens
    outside every sequence get the residual, as the add gave them). Only
    where the target has a gdpa kernel for the op (`whyNoAttentionKernel`;
    sm_90a and sm_100a, both of which take the residual); otherwise the add
    stays.

    The residual after a projection (`foldGemmResiduals`, after the folds
    above): a `fusion.add` of a GEMM's result (used by that add alone) and a
    16-bit tensor of the same type (no broadcast, either operand order)
    becomes the GEMM's `residual`, added to the f32 accumulator before the
    one rounding: the residual stream after Llama's `o_proj` and
    `down_proj`, GPT-2's `c_proj` (one kernel instead of a GEMM and an add
    kernel that reads the product again). The GEMM is a `fusion.matmul` (not
    a weight gradient), rebuilt at the add as a `fusion.fused_matmul` with
    its bias as `col_bias`, or a `fusion.fused_matmul` with an element-wise
    epilogue (`none`, `row_scale`: a Lazy Pre-Norm GEMM) and no residual yet,
    where the tensor is defined before it. f32 sums stay, as does an add in
    another block than its matmul (the GEMM would move into a loop).
    ```mlir
    %p = fusion.matmul %a, %w {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    %h = fusion.add %x, %p : tensor<?x4096xbf16>
    ```
    becomes (then planned like any other)
    ```mlir
    %h = fusion.fused_matmul %a, %w residual(%x : tensor<?x4096xbf16>)
        {transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```
    A parallel residual written as its users write it, the two projections
    summed first (GPT-NeoX's and GPT-J's `mlp_output + attn_output +
    residual`), is first reassociated (`reassociateParallelResiduals`) so
    that each GEMM takes a residual: `mlp + (attn + x)`, where mlp is a
    `fusion.matmul` (rebuilt after attn's sum) and x is not a GEMM's own
    result (then the sum folds as written). Each partial sum is rounded to
    16 bits once, after its GEMM:
    ```mlir
    %s = fusion.add %mlp, %attn : tensor<?x1024xbf16>
    %h = fusion.add %s, %x : tensor<?x1024xbf16>
    ```
    becomes
    ```mlir
    %t = fusion.fused_matmul %a, %wa residual(%x : tensor<?x1024xbf16>) ...
    %h = fusion.fused_matmul %m, %wm residual(%t : tensor<?x1024xbf16>)
        col_bias(%bm : tensor<1024xbf16>) ...
    ```

    With `post-residuals` (opt-in), an add of a forward norm epilogue's
    output (used by that add alone) and a 16-bit tensor of its type, not a
    residual (that would enter the norm): the tensor becomes the GEMM's `post_residual`, added after the
    norm's weight and bias before the one rounding (a sandwich norm's
    residual stream, `x + norm(o_proj(a))` in Gemma 2 / 3 and OLMo 2):
    ```mlir
    %n = fusion.fused_matmul %a, %w norm_weight(%g : tensor<4096xbf16>)
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-06 : f32, transpose_rhs}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    %h = fusion.add %x, %n : tensor<?x4096xbf16>
    ```
    becomes
    ```mlir
    %h = fusion.fused_matmul %a, %w norm_weight(%g : tensor<4096xbf16>)
        post_residual(%x : tensor<?x4096xbf16>) {epilogue = #fusion.epilogue<rms_norm>, ...}
        : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
    ```

    #### Input invariants
    - The module (or an enclosing one) carries `fusion.target` whenever it
      holds a GEMM.
    - The only fusion ops left are `fusion.matmul`, `fusion.fused_matmul`,
      the row ops (`fusion.rms_norm`, `fusion.layer_norm`, their grads,
      `fusion.add`, `fusion.mul`) and the attention ops with a kernel
      (`fusion.gdpa`, `fusion.gdpa_grad`, `fusion.norm_attention`):
      `fusion.norm_attention_grad` has no kernel yet.
    - lhs and rhs are bf16 or f16, of one element type; K and N are static
      multiples of 8 (TMA needs 16-byte row strides); M may be dynamic.
    - A norm or grad epilogue's row splits as `planEpilogueNorm` requires.

    #### Output IR
    Every `fusion.matmul` disappears into a `fusion.fused_matmul` (bias ->
    `col_bias`); every `fusion.fused_matmul` carries `fusion.kernel`. An
    existing `fusion.kernel` is replaced (an existing `fusion.kernel_small_m`
    with it: replanned or dropped). A LayerNorm-prologue GEMM without
    `col_sum` gets B's column sums as its `col_sum`: an `arith.constant`
    splat of ones [1, K] (B's type), a planned `fusion.fused_matmul` of it
    with B into f32 [1, N] and a `tensor.collapse_shape` to [N] (an f32
    constant instead when B is a constant); its tile_n is at most 192 on
    sm_90a. A `fusion.add` folded into a `fusion.gdpa` or a
    `fusion.gdpa_grad` as its `residual` (above) disappears; so does a
    `fusion.add` of a norm gradient's input gradient and a tensor of its
    shape, into the norm gradient's `residual` (with a
    `tensor.collapse_shape` / `expand_shape` of the other operand, and a
    `tensor.dim` of the norm's input for a dynamic size, when views lie
    between), and a `fusion.add` of a GEMM's result and a tensor of its
    type, into the GEMM's `residual` (above); with `rms-prologue`, a `fusion.rms_norm_grad` and the
    `tensor.expand_shape` of its input gradient folded into a
    `fusion.gdpa_grad` as its prologue (above) disappear, new
    `tensor.expand_shape`s of its dy and x appearing where no view of them
    as heads exists; the other row ops are unchanged. On an error the pass
    fails; the refused ops are unchanged.

    #### Options
    - `lazy-row-stats` (`auto`, `in-kernel`, `kernel`): where a Lazy
      Pre-Norm GEMM's row statistics are computed (above). Default `auto`.
    - `split-k` (default on): a weight gradient (`transpose_lhs`) whose
      output tiles would fill at most half the SMs splits K into up to 16
      ranges (`split_k` in `fusion.kernel`; on 132 SMs 16 / 7 / 4 for an
      [H, H] weight at H = 512 / 768 / 1024): f32 partial sums, then a
      kernel adding them in order (deterministic). `split-k=false` keeps one
      work item per output tile (0.09-0.33x cuBLAS at those sizes, against
      0.91-0.99x split, on the H200).
    - `stream-k` (default off: measured slower, below): a GEMM without a
      row reduction or prologue on sm_90a whose output tiles may not be a
      multiple of the grid (`stream_k` in `fusion.kernel`): the last full
      wave and the partial one are spread evenly over the persistent CTAs by
      K steps, a tile split between two CTAs (the later part's f32 partial
      sums handed to the CTA that finishes it through global memory), so
      that no SM waits for a last wave of a few tiles. Correct on the H200,
      but slower: the CTAs' ranges start at different K offsets, so their
      A and B slices no longer share L2 (a 4096 x 4096 weight gradient over
      65536 tokens 4.6 ms against 3.3 whole; 2-5% on long GEMMs);
      bench/results/HISTORY.md, session 27.
    - `multicast` (default on): a GEMM on sm_90a without a cluster along N,
      split-K, stream-K, epilogue warps, global rows, a row dot or a grad
      epilogue (not yet run as pairs), whose tile_n holds at least two
      64-column boxes and whose tiles outnumber the SMs (or M is dynamic),
      weight gradients (transpose_lhs) included, is planned for a
      pair of CTAs along M (`cluster_m = 2` in `fusion.kernel`): two
      consecutive row blocks of the same column block, each CTA loading
      half of B's tile by TMA multicast into both. B's reads from L2 drop
      by a third (a 128 x 256 tile's K step reads 16 KB of A and 32 KB of
      B; shared, 16 + 16). The pair's rings are shared: a slot is refilled
      when the consumers of both CTAs released it. Measured on an H100
      (262144 tokens, kernel time): plain GEMMs at 4096 14% faster
      (0.84-0.86x cuBLAS -> 0.96-0.98x), Lazy Pre-Norm at 4096 2%, 2048 1%,
      1024 within the rounds' spread (bench/results/HISTORY.md, session 44);
      the 4096 x 4096 weight gradient over 65536 tokens 3%, GPT-2's c_proj
      + residual at 4096 (col_bias and residual) 4% on the user-visible
      call (session 45). `multicast=false` plans one CTA per tile.
    - `small-m` (default on): the small-M kernel of a
      GEMM planned for a dynamic token count (`fusion.kernel_small_m`,
      above).
    - `small-m-split` (default off; run on an H100 in session 42: the
      16-token GEMM at hidden 4096 28% faster, 3-5% slower at 65536 tokens):
      a dynamic M's small-M configuration also gets `decode_splits = 4`
      where its K loop carries only the accumulator (no Lazy row sums in
      the kernel, no row dot): per call the host takes S = min(4, the
      cooperative grid over the small tiles, the K steps) K ranges per
      tile, a CTA per (tile, range), and range 0 adds the other ranges'
      sums from a workspace before the epilogue.
    - `gemm-residuals` (default on): the residual fold after a projection
      (`foldGemmResiduals`, above); `fusion-compile --no-fuse` turns it off,
      so that its unfused baseline keeps the GEMM and the add kernel.
    - `post-residuals` (default off; `fusion-compile --post-residual`): the
      post_residual fold after a norm epilogue (above). Correct on an H100
      (session 46) but slower than the norm epilogue and an add kernel:
      OLMo 2's o_proj at hidden 1024, 65536 tokens, 0.516 ms against the
      three unfused kernels' 0.427 (phase B's loads of the residual wait on
      L2 once per two rows, and the epilogue warps then bound the kernel).
    - `decode-swap` (default off; run on an H100 in session 43: the 16-token
      GEMM at hidden 4096 33 -> 23 us, the per-head form slower; 65536
      tokens not yet measured): a
      GEMM planned for a dynamic token count with an element-wise epilogue
      (none or row_scale, with col_bias and residual; no prologue in the
      kernel) or a per-head RMSNorm over heads of 128 (tiles of one head),
      nn.Linear's [N, K] weight and 16-bit operands, also gets
      `fusion.kernel_decode`: the same kernel's third body, taken by calls
      of at most 32 tokens, computes y^T = W x^T with a 64-row slice of the
      weight as the MMA's A and the tokens as its N (rings of 8 KB of
      weight and 4 KB of tokens a stage):

      ```mlir
      // after (decode-swap=true), beside fusion.kernel and fusion.kernel_small_m
      fusion.kernel_decode = #fusion.kernel_config<tile_m = 32, tile_n = 64,
          tile_k = 64, stages = 18, cluster_n = 1, consumers = 2, smem_bytes = ...>
      ```
    - `max-epilogue-cluster` (default 0: the target's, 4 on sm_90a): the
      most CTAs of a cluster a forward norm epilogue's row may take; a row
      needing more goes through global memory (`global_rows`, every SM busy
      where a cluster of 4 runs on 120 of the H200's 132). Grad epilogues
      keep the target's limit.
    - `rms-prologue` (default off until `convert-fusion-to-gpu` lowers the
      prologue form): fold a `fusion.rms_norm_grad` into the
      `fusion.gdpa_grad` it feeds as its RMSNorm-gradient prologue (above).
    - `report`: a remark per planned kernel: each GEMM's `fusion.kernel`
      configuration (and its `fusion.kernel_small_m`), each residual add
      folded into a GEMM, each norm gradient that took an add as its residual
      (and, on an add of a norm gradient's input gradient that did not
      fold, why not), each gdpa_grad that took its rms_norm_grad as its
      prologue (and, on one fed by an rms_norm_grad that did not, why not),
      and for `fusion.gdpa` / `fusion.norm_attention` the
      attention kernel's plan (`describeAttentionLayout`,
      `fusion/Target/NVPTX/AttentionKernelLimits.h`, the layout the kernel
      is built with): 128-token items over (batch, head), or over batch
      taken by a cluster of the H heads' CTAs with the norms; stages of
      Q, K, V and the shared memory they take; the persistent grid. E.g.
      ```
      remark: attention kernel on sm_90a: work items of 128 query tokens
        (2 consumer warpgroups of 64 rows) over (batch, token tile), each
        taken by a cluster of 2 CTAs, one per head (the norms' row sums
        through DSMEM); keys and values whole in shared memory (L_kv 128
        padded to 128); 2 stages of Q, K, V: 205312 bytes of shared memory
        of 232448; a persistent grid of min(items, co-resident clusters)
        clusters
      ```

    #### Target requirements
    Reads `fusion.target`. sm_90a: the rules above (wgmma, TMA, clusters up
    to 16 CTAs with the non-portable attribute). sm_100a: planned with the
    same skeleton but `tile_n` up to 512 (the TMEM columns of one lane);
    lowered for the plain GEMM and the one-CTA and cluster norm epilogues
    (assembled, never executed). Fails on a module holding a GEMM but no
    target. The residual fold applies on both targets (the same row family
    lowers norm gradients there), and not without a target; the
    RMSNorm-gradient prologue fold on sm_90a only.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"lazyRowStats", "lazy-row-stats", "std::string", /*default=*/"\"auto\"",
           "where a Lazy Pre-Norm GEMM's row statistics are computed: auto "
           "(the cost model), in-kernel (from the A tiles, once per output "
           "tile) or kernel (a stats-only fusion.rms_norm before the GEMM, "
           "applied as its row_scale)">,
    Option<"splitK", "split-k", "bool", /*default=*/"true",
           "split K for weight gradients whose output tiles would leave most "
           "SMs idle (f32 partial sums added by a second kernel)">,
    Option<"streamK", "stream-k", "bool", /*default=*/"false",
           "spread a GEMM's last waves over the CTAs by K steps where its "
           "tiles are not a multiple of the grid (no row reduction, sm_90a)">,
    Option<"multicast", "multicast", "bool", /*default=*/"true",
           "a pair of CTAs along M shares B's tiles by TMA multicast "
           "(cluster_m = 2) where the GEMM takes it (sm_90a)">,
    Option<"smallM", "small-m", "bool", /*default=*/"true",
           "give a GEMM planned for a dynamic token count a second body of "
           "64-column tiles for calls whose few rows would leave most SMs "
           "idle (fusion.kernel_small_m; sm_90a)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per planned kernel: the GEMM's configuration, the "
           "attention kernel's items, stages, shared memory and grid">,
    Option<"maxEpilogueCluster", "max-epilogue-cluster", "int64_t",
           /*default=*/"0",
           "the most CTAs of a cluster a forward norm epilogue's row may "
           "take (0: the target's); wider rows go through global memory">,
    Option<"rmsPrologue", "rms-prologue", "bool", /*default=*/"false",
           "fold a fusion.rms_norm_grad feeding a fusion.gdpa_grad into it "
           "as its RMSNorm-gradient prologue where the target's kernel "
           "takes that form (off until convert-fusion-to-gpu lowers it)">,
    Option<"smallMSplit", "small-m-split", "bool", /*default=*/"false",
           "let the small-M kernel of a dynamic token count split K into up "
           "to 4 ranges per tile (decode_splits), range 0 finishing the "
           "tile, where its K loop carries only the accumulator "
           "(opt-in: faster at decode sizes, slower at 65536 tokens)">,
    Option<"decodeSwap", "decode-swap", "bool", /*default=*/"false",
           "give a GEMM of a dynamic token count whose epilogue is "
           "element-wise a third body for calls of up to 32 tokens, with "
           "the operands swapped (fusion.kernel_decode; experimental)">,
    Option<"gemmResiduals", "gemm-residuals", "bool", /*default=*/"true",
           "fold a fusion.add of a GEMM's result and a tensor of its type "
           "into the GEMM's residual (foldGemmResiduals; fusion-compile "
           "--no-fuse turns it off, for the unfused baseline)">,
    Option<"postResiduals", "post-residuals", "bool", /*default=*/"false",
           "fold a fusion.add of a forward norm epilogue's output and a "
           "tensor of its type into the GEMM's post_residual (opt-in: "
           "slower than the add kernel on an H100, session 46)">,
    Option<"sideKernels", "side-kernels", "bool", /*default=*/"true",
           "run a norm gradient beside the GEMM before it on a side stream "
           "where that GEMM's work units leave SMs idle and the norm "
           "gradient does not use its result (fusion.side_kernel)">,
    Option<"sideSms", "side-sms", "int64_t", /*default=*/"-1",
           "the SMs a split-K GEMM with a side kernel leaves to it, its K "
           "ranges planned for the others (-1: a quarter of the target's)">
  ];
}

//===----------------------------------------------------------------------===//
// FusionRaiseLinalg
//===----------------------------------------------------------------------===//

def FusionRaiseLinalgPass : Pass<"fusion-raise-linalg", "::mlir::ModuleOp"> {
  let summary = "recognize RMSNorm, LayerNorm and matmuls written in linalg, and linear biases";
  let description = [{
    Frontends such as torch-mlir emit norms as a chain of upstream linalg ops
    on tensors: a reduction of x (or of x^2) over the innermost dimension, a
    division by N, an epsilon add, rsqrt (or sqrt and a division), broadcasts
    and element-wise multiplies (and the weight/bias). This pass recognizes
    those chains in their common variants and `linalg.matmul` /
    `linalg.batch_matmul` on tensors, and replaces them with `fusion.rms_norm`,
    `fusion.layer_norm` and `fusion.matmul`, so that the fusion passes can see
    them. Everything it does not recognize is left untouched.

    It also gives nn.Linear its one-op form, `fusion.matmul ... bias(%b)`
    (the bias then rides in the GEMM kernel's `col_bias`), when the bias is
    written as a separate add after a `fusion.matmul` that has no bias and no
    other user: `fusion.add %mm, %b` with `%b` [N] or [1, N], or with `%b` a
    `linalg.broadcast` of an [N] vector to [M, N] (either operand order); in
    f32 linalg, a `linalg.generic` sum of the matmul and a column vector
    (read as (d0, d1) -> (d1) or (0, d1)), a `linalg.add` of the matmul and a
    `linalg.broadcast`, and a `linalg.matmul` accumulating into a
    `linalg.broadcast` of a bias (the addmm form). The raised form adds the
    bias in f32 before the single rounding (identical for f32 results).
    Likewise a norm's affine transform written after it becomes part of the
    norm: `fusion.mul %n, %g` of a weightless `fusion.rms_norm` or
    `fusion.layer_norm` output by an [N] (or [1, ..., 1, N]) vector (HF
    LlamaRMSNorm's `weight * rms_norm(x)`) its weight, and `fusion.add %n,
    %beta` of a biasless LayerNorm's output its bias, when the normalized
    value has no other user and the statistics none (one rounding instead of
    two).

    Example:
    ```mlir
    %sq  = linalg.generic {iterator_types = ["parallel", "reduction"]} ... // sum x*x
    %r   = linalg.generic ... // rsqrt(sum / 512 + 1e-5)
    %y   = linalg.generic ... // x * r
    ```
    becomes
    ```mlir
    %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
        : tensor<4096x512xf32> -> tensor<4096x512xf32>
    ```
    and
    ```mlir
    %h = fusion.matmul %x, %w {transpose_rhs}
        : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
    %y = fusion.add %h, %b : tensor<?x1024xbf16>, tensor<1024xbf16>
    ```
    becomes
    ```mlir
    %y = fusion.matmul %x, %w bias(%b : tensor<1024xbf16>) {transpose_rhs}
        : tensor<?x512xbf16>, tensor<1024x512xbf16> -> tensor<?x1024xbf16>
    ```

    #### Input invariants
    - Linalg on tensors, with static innermost sizes and an epsilon that is
      a constant.

    #### Output IR
    `fusion.rms_norm`, `fusion.layer_norm` (with the weight or bias of an
    absorbed mul or add), `fusion.matmul` (with `bias` where an add was
    absorbed); a `tensor.collapse_shape` of a [1, N] vector to [N]; the
    matched linalg ops and absorbed adds and muls disappear. Nothing else
    changes.

    #### Options
    None.

    #### Target requirements
    None.
  }];
  let dependentDialects = ["::mlir::fusion::FusionDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// FusionRegroupBackward
//===----------------------------------------------------------------------===//

def FusionFoldNormWeightPass
    : Pass<"fusion-fold-norm-weight", "::mlir::ModuleOp"> {
  let summary = "move a training step's RMSNorm weight into the linear "
                "layers after it, so the step saves x_hat";
  let description = [{
    A training step of `h -> RMSNorm(weight g) -> linear` saves two [M, N]
    tensors for its backward: the norm's input h (its gradient reads it)
    and its output n = x_hat g (the next layer's weight gradient reads it).
    With g moved into the next layer both are x_hat:

        y  = n W^T  = x_hat (W diag(g))^T        (W diag(g): fusion.mul W, g)
        dW = dy^T n = (dy^T x_hat) diag(g)       (fused_matmul col_scale(g))
        dh = rms_norm_grad(dn, x_hat, rstd, g) {normalized_input}

    The norm loses its weight and its input every other reader, so that
    `fusion-epilogue-norm` then fuses it into the GEMM producing h as an
    epilogue that writes x_hat and rstd only: one [M, N] store instead of
    two in that GEMM, one [M, N] tensor less kept for the backward.
    W diag(g) costs one small element-wise kernel per call (the weights
    change every step). The values differ from the unfolded program by
    bf16 roundings only: x_hat and W diag(g) are rounded where n was.

    Example:
    ```mlir
    %n, %rstd = fusion.rms_norm %h weight(%g : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32}
        : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
    %y = fusion.matmul %n, %w2 {transpose_rhs} : ...
    %dw2 = fusion.matmul %dy, %n {transpose_lhs} : ...
    %dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : tensor<1024xbf16>) : ...
    ```
    becomes
    ```mlir
    %xh, %rstd = fusion.rms_norm %h {epsilon = 1.0e-05 : f32}
        : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
    %wg = fusion.mul %w2, %g : tensor<1024x1024xbf16>, tensor<1024xbf16>
    %y = fusion.matmul %xh, %wg {transpose_rhs} : ...
    %dw2 = fusion.fused_matmul %dy, %xh col_scale(%g : tensor<1024xbf16>) {transpose_lhs} : ...
    %dh, %dg = fusion.rms_norm_grad %dn, %xh, %rstd weight(%g : tensor<1024xbf16>)
        {normalized_input} : ...
    ```

    A backward written apart from its forward (the Python front end's,
    whose training forward already saved x_hat and computes W diag(g))
    scales the weight gradient itself, `fusion.mul (dy^T x_hat), g`: the pass
    makes any product of a GEMM's output and a vector over its columns that
    GEMM's `col_scale` (one rounding where there were two):
    ```mlir
    %gw = fusion.matmul %dy, %xh {transpose_lhs} : ...
    %dw2 = fusion.mul %gw, %g : tensor<1024x1024xbf16>, tensor<1024xbf16>
    ```
    becomes `%dw2 = fusion.fused_matmul %dy, %xh col_scale(%g : ...) {transpose_lhs}`.

    #### Input invariants
    - The norm is a `fusion.rms_norm` with a weight, 2-D rows, and an
      output of its input's type (the gradient reads x_hat where it read h).
    - Its input is read only by it and by `fusion.rms_norm_grad` ops that
      take its input, its rstd and its weight (at least one).
    - Its output is read only by `fusion.matmul` layers `n W^T` (n as lhs,
      `transpose_rhs`: nn.Linear's [out, in] weight; at least one) and
      weight gradients `dy^T n` (n as rhs, `transpose_lhs`, no bias).
    - The layers' weights are static, with at most 2 N outputs in all:
      W diag(g) is computed on every call (reading and writing the
      weights), where the fold saves one [M, N] store; measured for a
      square layer (session 54), so wider ones (a gated MLP's) are left
      alone until measured.

    #### Output IR
    As above; a norm left alone keeps its weight (a remark says why under
    `report`). A column scale is fused where its GEMM (a `fusion.matmul`,
    or a `fusion.fused_matmul` with epilogue `none` or `row_scale` and no
    prologue) has no bias, residual, activation, rope or column scale and
    no other reader,
    and the vector is [N] of the output's element type. LayerNorm (whose bias would add a rank-one term to dW) is
    not folded.

    #### Options
    - `report`: emit a remark per training step's fusion.rms_norm (one with
      a weight whose input a gradient reads): folded, or why not; and per
      column scale of a GEMM's output: fused, or why not.
    `fusion-fuse` runs it after backward regrouping and before the epilogue
    norms (`fold-norm-weight=false`, `fusion-compile --no-fold-norm-weight`,
    leaves it out). On an H100 (session 54) the training step's forward GEMM
    with the norm took 253.8 -> 227.2 us at H 1024 (168.2 -> 145.9 at 768)
    and the step 1282 -> 1256 us.

    #### Target requirements
    None: the rewrite holds on every target (the GEMM kernels of sm_90a and
    sm_100a take `col_scale`).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per training step's fusion.rms_norm: folded, or "
           "why not">,
  ];
}

def FusionRegroupBackwardPass
    : Pass<"fusion-regroup-backward", "::mlir::ModuleOp"> {
  let summary = "fuse a norm's backward (and a weightless norm itself) into GEMM epilogues";
  let description = [{
    Backward regrouping (`docs/SEED.md` section 3.1). In a program holding
    `z = x @ W1; h = norm(z); y = h @ W2` and its backward
    `dh = dy @ W2^T; dz = norm_grad(dh, z, stats)`, the forward norm becomes
    the epilogue of the first GEMM (saving its statistics) and the backward
    norm the epilogue of the dgrad GEMM `dy @ W2^T` that produces its incoming
    gradient, never a prologue. The backward reads the forward's normalized
    output (`normalized_input`) and the saved statistics, so neither z nor the
    norm's input is materialized.

    Example:
    ```mlir
    %z = fusion.matmul %x, %w1 : ...
    %h, %rstd = fusion.rms_norm %z {epsilon = 1.0e-05 : f32} : ...
    %dh = fusion.matmul %dy, %w2 {transpose_rhs} : ...
    %dz = fusion.rms_norm_grad %dh, %z, %rstd : ...
    ```
    becomes
    ```mlir
    %h, %rstd = fusion.fused_matmul %x, %w1
        {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats} : ...
    %dz = fusion.fused_matmul %dy, %w2 norm_input(%h : ...) rstd(%rstd : ...)
        {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs} : ...
    ```

    A norm with an affine weight or bias has an output that is not x_hat:
    only its backward is regrouped, the grad epilogue reading z, the saved
    statistics and the weight, and returning dweight (and dbias with
    `with_bias_grad`); the forward norm stays:
    ```mlir
    %dz, %dg = fusion.fused_matmul %dy, %w2 norm_weight(%g : ...)
        norm_input(%z : ...) rstd(%rstd : ...)
        {epilogue = #fusion.epilogue<rms_norm_grad>, transpose_rhs} : ...
    ```

    A norm with a weight whose output also feeds the next layer
    `y = h @ W2^T (+ b2)`, the layer whose dgrad is `dh = dy @ W2`, gets its
    gradient's row sums from that layer's output instead of from dh's row:
    `<dh_i, h_i> = <dy_i, y_i - b2>`, a row dot over the dgrad's K that its
    CTAs compute in their main loop from A's tiles and y's (`row_dot`, less
    `row_dot_shift` = b2), so the row needs no exchange across CTAs and any
    row size is regrouped (a Llama pre-norm's training step). A LayerNorm
    (output x_hat w + beta) shifts by b2 + beta W2^T and sums dh w as the
    row dot with w W2^T (`row_dot_sum`): two [K] vectors the pass builds as
    1-row `fusion.matmul`s. For example
    ```mlir
    %h, %rstd = fusion.rms_norm %z weight(%g : ...) {epsilon = 1.0e-05 : f32} : ...
    %y = fusion.matmul %h, %w2 {transpose_rhs} : ...
    %dh = fusion.matmul %dy, %w2 : ...
    %dz, %dg = fusion.rms_norm_grad %dh, %z, %rstd weight(%g : ...) : ...
    ```
    becomes
    ```mlir
    %dz, %dg = fusion.fused_matmul %dy, %w2 norm_weight(%g : ...)
        norm_input(%z : ...) rstd(%rstd : ...) row_dot(%y : ...)
        {epilogue = #fusion.epilogue<rms_norm_grad>} : ...
    ```
    Not where y is only added to a skip connection (its GEMM stores the
    sum, not y), b2 is not of y's element type, or y is computed after the
    gradient.

    #### Input invariants
    - The grad takes the forward norm's weight (both or neither).
    - dh is a `fusion.matmul` result used only by the grad; without an
      affine transform, z is a `fusion.matmul` result used only by the norm
      and its grad.
    - The row fits the target as in `fusion-epilogue-norm`, within a
      cluster: rows that need the global-memory exchange are not regrouped,
      unless the row sum comes from a row dot.

    #### Output IR
    Without an affine transform, two `fusion.fused_matmul` ops (forward
    `rms_norm`/`layer_norm` epilogue with `save_stats`; backward `*_grad`
    epilogue with `normalized_input`); with one, the backward fused op only.
    A matmul's bias becomes its fused op's `col_bias`; a norm gradient's
    `residual` (the gradient along a skip connection) the backward fused
    op's `residual`, which the grad epilogue adds to dx.

    #### Options
    - `report`: emit a remark per norm: regrouped, or why not.
    - `apply` (default true): rewrite. `fusion-fuse` runs the pass with
      `apply=false` unless `fusion-fuse{regroup-backward=true}`
      (`fusion-compile --regroup-backward`): the sm_90a grad epilogue (in the
      dgrad GEMM's epilogue warps for a bf16 dx) has not been measured on the
      H200 yet (its first form, in the consumers, was slower than the
      unregrouped step); with `apply=false` a norm that would be regrouped is
      left alone with a remark saying so.

    #### Target requirements
    Reads `fusion.target` like `fusion-epilogue-norm`; leaves the IR
    unchanged without it.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per norm: regrouped, or why not">,
    Option<"apply", "apply", "bool", /*default=*/"true",
           "rewrite (false: only the remarks, for fusion-fuse while the GPU "
           "kernels have no grad epilogue)">,
    Option<"rowDot", "row-dot", "bool", /*default=*/"true",
           "take an RMSNorm gradient's row sum from the next layer's output "
           "(row_dot) where the program has it (false: the row exchange form "
           "only)">,
  ];
}

#endif // FUSION_DIALECT_FUSION_TRANSFORMS_PASSES

//===----------------------------------------------------------------------===//
// FusionSetTarget
//===----------------------------------------------------------------------===//

def FusionSetTargetPass : Pass<"fusion-set-target", "::mlir::ModuleOp"> {
  let summary = "set the module's fusion.target (the GPU the kernels are planned and built for)";
  let description = [{
    Sets `fusion.target = #fusion.target<"chip">` on the module, replacing
    one the module already has: the same program built for another GPU
    without editing it (`fusion-compile --target sm_100a`). Every pass that
    plans for a target (fusion-epilogue-norm, fusion-form-norm-attention,
    fusion-plan-kernels, convert-fusion-to-gpu) reads this attribute, so the
    pass runs first.

    Before:
    ```mlir
    module attributes {fusion.target = #fusion.target<"sm_90a">} { ... }
    ```
    After `fusion-set-target{chip=sm_100a}`:
    ```mlir
    module attributes {fusion.target = #fusion.target<"sm_100a">} { ... }
    ```

    #### Options
    - `chip` (required): one of the known chips (`sm_90a`, `sm_100a`); an
      unknown or empty one fails the pass with the list.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "the target chip: sm_90a or sm_100a">
  ];
}

