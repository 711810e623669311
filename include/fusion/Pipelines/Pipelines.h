//===- Pipelines.h - named fusion pipelines ---------------------*- C++ -*-===//

#ifndef FUSION_PIPELINES_PIPELINES_H
#define FUSION_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace fusion {

struct FusionFuseOptions : public PassPipelineOptions<FusionFuseOptions> {
  PassOptions::Option<bool> report{
      *this, "report",
      llvm::cl::desc("emit a remark on every norm and attention block: what "
                     "it was fused into, or why not"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> lazyLayerNorm{
      *this, "lazy-layer-norm",
      llvm::cl::desc("let Lazy Pre-Norm defer LayerNorm too"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> regroupBackward{
      *this, "regroup-backward",
      llvm::cl::desc("let fusion-regroup-backward rewrite: a weightless norm "
                     "and its gradient into the GEMM epilogues on both sides "
                     "(off by default, only its remarks: the GPU kernels have "
                     "no grad epilogue yet; the CPU pipeline runs them)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> foldNormWeight{
      *this, "fold-norm-weight",
      llvm::cl::desc(
          "run fusion-fold-norm-weight: a training step's RMSNorm "
          "weight into the next linear layers and their weight "
          "gradients, the step saving x_hat (measured faster on an "
          "H100: the forward GEMM with the norm -10% at H 768-1024)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> regroupRowDot{
      *this, "regroup-row-dot",
      llvm::cl::desc("with regroup-backward: take an RMSNorm gradient's row "
                     "sum from the next layer's output where the program has "
                     "it (no row exchange); false: the exchange form only"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> normAttention{
      *this, "norm-attention",
      llvm::cl::desc("let fusion-form-norm-attention rewrite an attention "
                     "block into fusion.norm_attention (for a GPU target only "
                     "where its FlashNormAttention kernel takes the block); "
                     "false: only its remarks, the block stays as its ops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> activationEpilogue{
      *this, "activation-epilogue",
      llvm::cl::desc("let fusion-activation-epilogue fold an MLP's activation "
                     "(and a gated product) into its first GEMM"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> ropeEpilogue{
      *this, "rope-epilogue",
      llvm::cl::desc("run fusion-rope-epilogue: fold a projection's rotary "
                     "embedding into its GEMM (where the target's kernel can "
                     "rotate it)"),
      llvm::cl::init(true)};
};

/// fusion-fuse: fusion-raise-linalg, fusion-form-norm-attention (rewriting
/// unless norm-attention=false), fusion-regroup-backward (rewriting only with
/// regroup-backward), fusion-fold-norm-weight (unless fold-norm-weight=false),
/// fusion-epilogue-norm, fusion-lazy-prenorm,
/// fusion-activation-epilogue (unless activation-epilogue=false),
/// fusion-rope-epilogue (unless rope-epilogue=false), canonicalize and cse,
/// then fusion-outline-weight-prep.
void buildFusionFusePipeline(OpPassManager &pm, const FusionFuseOptions &options);

struct FusionToGPUOptions : public PassPipelineOptions<FusionToGPUOptions> {
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("device code format: isa (PTX text), bin (cubin, runs "
                     "ptxas) or fatbin"),
      llvm::cl::init("bin")};
  PassOptions::Option<std::string> lazyRowStats{
      *this, "lazy-row-stats",
      llvm::cl::desc("fusion-plan-kernels' lazy-row-stats: where a Lazy "
                     "Pre-Norm GEMM's row statistics are computed (auto, "
                     "in-kernel, kernel)"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> splitK{
      *this, "split-k",
      llvm::cl::desc("fusion-plan-kernels' split-k: split K for small weight "
                     "gradients (on by default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> streamK{
      *this, "stream-k",
      llvm::cl::desc("fusion-plan-kernels' stream-k: spread a GEMM's last "
                     "waves over the CTAs by K steps (off by default: "
                     "measured slower)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> multicast{
      *this, "multicast",
      llvm::cl::desc("fusion-plan-kernels' multicast: a pair of CTAs along M "
                     "sharing B's tiles by TMA multicast (cluster_m = 2; "
                     "sm_90a; on by default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> smallM{
      *this, "small-m",
      llvm::cl::desc("fusion-plan-kernels' small-m: a second body of 64-column "
                     "tiles for a dynamic token count's decode-sized calls "
                     "(on by default; measured on the GPU in session 40)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> smallMSplit{
      *this, "small-m-split",
      llvm::cl::desc("fusion-plan-kernels' small-m-split: the small-M body "
                     "splits K per tile at decode sizes (off by default: "
                     "slower at 65536 tokens, session 42)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> decodeSwap{
      *this, "decode-swap",
      llvm::cl::desc("fusion-plan-kernels' decode-swap: a third GEMM body "
                     "with the operands swapped for calls of up to 32 "
                     "tokens (off by default: experimental)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> gemmResiduals{
      *this, "gemm-residuals",
      llvm::cl::desc("fusion-plan-kernels' gemm-residuals: a GEMM result's "
                     "add with a tensor of its type becomes the GEMM's "
                     "residual (on by default; fusion-compile --no-fuse "
                     "turns it off)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> postResiduals{
      *this, "post-residuals",
      llvm::cl::desc("fusion-plan-kernels' post-residuals: a norm epilogue's "
                     "output's add with a tensor of its type becomes the "
                     "GEMM's post_residual (off by default: slower than the "
                     "add kernel on an H100, session 46)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> sideKernels{
      *this, "side-kernels",
      llvm::cl::desc("fusion-plan-kernels' side-kernels: a norm gradient runs "
                     "beside the GEMM before it on a side stream where that "
                     "GEMM leaves SMs idle (on by default)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> sideSms{
      *this, "side-sms",
      llvm::cl::desc("fusion-plan-kernels' side-sms: the SMs a split-K GEMM "
                     "leaves to its side kernel (-1: a quarter)"),
      llvm::cl::init(-1)};
  PassOptions::Option<int64_t> normGradStages{
      *this, "norm-grad-stages",
      llvm::cl::desc("convert-fusion-to-gpu's norm-grad-stages: the steps of "
                     "rows a norm gradient keeps in flight through shared "
                     "memory (0, the default: none; -1: side kernels only; "
                     "N >= 2: every one, at most N)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> l2PrefetchA{
      *this, "l2-prefetch-a",
      llvm::cl::desc("convert-fusion-to-gpu's l2-prefetch-a: a forward norm "
                     "epilogue in epilogue warps prefetches the next tile's A "
                     "into L2 as each tile starts"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> maxEpilogueCluster{
      *this, "max-epilogue-cluster",
      llvm::cl::desc("fusion-plan-kernels' max-epilogue-cluster: the most CTAs "
                     "of a cluster a forward norm epilogue's row may take (0: "
                     "the target's)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> fpContract{
      *this, "fp-contract",
      llvm::cl::desc("fusion-contract-float-ops: let the device code fuse a "
                     "multiply and an add into one FMA (on by default, as "
                     "nvcc's --fmad)"),
      llvm::cl::init(true)};
};

/// fusion-to-gpu: fusion-plan-kernels, convert-fusion-to-gpu, then the passes
/// of upstream's gpu-lower-to-nvvm-pipeline (-O3) without its
/// nvvm-attach-target: the chip and PTX features are the #nvvm.target that
/// convert-fusion-to-gpu derived from the module's fusion.target, the only
/// place they are read from.
void buildFusionToGPUPipeline(OpPassManager &pm, const FusionToGPUOptions &options);

/// fusion-to-cpu: fusion-cpu-entry-points (the library ABI), then the
/// reference lowering (convert-fusion-to-linalg), eliminate-empty-tensors,
/// one-shot-bufferize, buffer deallocation, and the lowering of loops, bf16
/// and f16 arithmetic (emulated in f32) and math to the LLVM dialect; then
/// mlir-translate --mlir-to-llvmir (or fusion-compile --cpu).
void buildFusionToCPUPipeline(OpPassManager &pm);

/// Registers the named pipelines with the global registry.
void registerFusionPipelines();

} // namespace fusion
} // namespace mlir

#endif // FUSION_PIPELINES_PIPELINES_H
