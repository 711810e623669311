//===- RowSpec.h - the row kernels: what each one computes ------*- C++ -*-===//
//
// The row family of convert-fusion-to-gpu: the memory-bound ops the fusion
// passes leave standing get kernels of their own, so that every forward
// program runs whole on the GPU:
//   - fusion.rms_norm and fusion.layer_norm (forward, with their statistics):
//     one group of `threadsPerRow` threads per row, the row held in registers
//     as 16-byte vectors, the row sums reduced by warp shuffles and, across
//     the warps of a group, through shared memory; LayerNorm's variance is
//     the centered second pass over the registers;
//   - fusion.rms_norm_grad and fusion.layer_norm_grad (the backward ops the
//     fusion passes leave standing): groups of threadsPerRow threads (a
//     multiple of 32 filling CTAs of whole warpgroups, at most three
//     vectors each) compute dx from dy, x and
//     the saved statistics, and accumulate each thread's columns of dweight
//     / dbias over the rows they visit (a residual operand is read beside dy
//     and added to dx before it is rounded; fusion-plan-kernels folds a
//     residual branch's fusion.add into it); a persistent grid sized from
//     the registers (gradCTAsPerSM CTAs on each of the target's SMs, a
//     compile-time constant) sums its groups' columns in shared memory in
//     a fixed order and writes one partial row per CTA, and a second kernel
//     sums the partial rows of each column in a fixed order (the parameter
//     gradients are bitwise the same run to run);
//   - fusion.add and fusion.mul with rhs broadcast (same shape, a row vector,
//     a column, one value): a flat element-wise kernel, 16-byte vectors;
//   - fusion.activation: the same kernel with one operand, act(x) in f32
//     (ActivationMath.h's formulas) rounded once on the store.
// Every operand is viewed as [rows, n]: the leading dimensions flattened,
// `n` the innermost size, which must be static (the launch shape and the
// vector width depend on it); rows may be dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <string>

namespace mlir::fusion {

class HostLowering;

enum class RowOpKind {
  RMSNorm,
  LayerNorm,
  RMSNormGrad,
  LayerNormGrad,
  Add,
  Mul,
  Activation,
  Rope
};

/// How a binary op's rhs covers lhs viewed as [rows, n].
enum class Broadcast {
  Same,   ///< [rows, n]: lhs's shape
  Row,    ///< [n]: one row vector, for every row
  Column, ///< [rows, 1]: one value per row
  Scalar, ///< [1]: one value
};

struct RowKernelSpec {
  RowOpKind kind;
  Type elem;            ///< input and output element type
  Type rhsElem;         ///< binary ops: rhs's element type
  Type weightElem, biasElem; ///< norms: the affine parameters', or null
  Type residualElem;    ///< norm gradients: the residual's, or null
  int64_t n = 0;        ///< innermost size (static)
  int64_t vec = 1;      ///< elements per access (16 bytes of elem, or 1)
  double epsilon = 0.0;
  bool mean = false, rstd = false; ///< statistics written
  /// Norms: whether the normalized rows are written. Not when nothing reads
  /// them: a norm kept only for its statistics (the rstd that a GEMM applies
  /// as its row_scale, see fusion-plan-kernels) reads its rows once and
  /// writes one value per row.
  bool output = true;
  /// Norm gradients: dweight (a weight is given) and dbias are results.
  bool weightGrad = false, biasGrad = false;
  /// Norm gradients: the input is x_hat (`normalized_input`), not x.
  bool normalizedInput = false;
  Broadcast broadcast = Broadcast::Same;
  /// fusion.activation: the function applied to each element.
  Activation activation = Activation::identity;
  /// fusion.rope: the heads' size, the rotary dimension (R <= headDim,
  /// the tables' innermost size) and GPT-J's pairs (2i, 2i + 1).
  int64_t headDim = 0, rotaryDim = 0;
  bool interleaved = false;

  // Norms: a group of threadsPerRow threads per row, each holding
  // vecsPerThread vectors; rowsPerBlock groups per CTA.
  int64_t threadsPerRow = 32, vecsPerThread = 1, rowsPerBlock = 1;
  // Norm gradients: rows a group takes per step of its loop (their loads
  // issued together, their group sums exchanged at once), the register cap
  // of the dx kernel (.maxnreg) and the CTAs of its persistent grid on each
  // SM that it allows.
  int64_t gradRowsPerStep = 1, gradMaxRegisters = 0, gradCTAsPerSM = 1;
  /// Norm gradients: 0, the rows' loads go to registers; S >= 2, they go
  /// through a ring of S steps in shared memory by cp.async (16-byte
  /// vectors, no registers held while in flight), S - 1 steps ahead of the
  /// step being computed (planNormGradStages).
  int64_t gradStages = 0;
  // Element-wise: vectors per thread (coalesced, blockThreads apart).
  static constexpr int64_t kVectorsPerThread = 4;
  // The parameter-gradient reduction kernel's shape: columns per CTA (a
  // warp reads 32 / kReduceColumns partial rows of them at once, 32 bytes of
  // each), warps splitting the partial rows, loads in flight per thread.
  // Eight columns a CTA put 128 CTAs on a row of 1024 (32 columns: 32 CTAs,
  // 12 us for the 2112 partial rows of a side kernel on an H100).
  static constexpr int64_t kReduceColumns = 8, kReduceWarps = 16,
                           kReduceUnroll = 8;
  /// Its dynamic shared memory: one sum per thread, and the alignment pad.
  static constexpr int64_t kReduceSharedBytes = kReduceWarps * 32 * 4 + 16;

  bool isNorm() const {
    return kind == RowOpKind::RMSNorm || kind == RowOpKind::LayerNorm ||
           isNormGrad();
  }
  bool isNormGrad() const {
    return kind == RowOpKind::RMSNormGrad || kind == RowOpKind::LayerNormGrad;
  }
  bool isLayerNorm() const {
    return kind == RowOpKind::LayerNorm || kind == RowOpKind::LayerNormGrad;
  }
  /// The one element-wise op without an rhs (fusion.activation; the others,
  /// fusion.add and fusion.mul, are binary).
  bool isUnary() const { return kind == RowOpKind::Activation; }
  bool isRope() const { return kind == RowOpKind::Rope; }
  /// Norm gradients: the parameter gradients computed (0, 1 or 2).
  int64_t paramGrads() const { return weightGrad + biasGrad; }
  int64_t chunks() const { return n / vec; }
  int64_t blockThreads() const {
    return isNorm() ? threadsPerRow * rowsPerBlock : 256;
  }
  /// Dynamic shared memory. Norms: one f32 slot per warp for each of the
  /// norm's two reductions (none when a row fits one warp). Norm gradients:
  /// four f32 slots per warp for each of two steps (the group sums of
  /// g x_hat and g of the step's rows, alternating between the steps), and
  /// with several groups per CTA the row of each parameter gradient they
  /// are summed in.
  int64_t sharedMemoryBytes() const {
    if (isNormGrad()) {
      int64_t bytes = gradRingOffset() + gradRingBytes();
      return bytes ? bytes + 16 : 0;
    }
    if (!isNorm() || threadsPerRow <= 32)
      return 0;
    return 2 * (blockThreads() / 32) * 4 + 16;
  }
  int64_t gradExchangeBytes() const {
    return threadsPerRow > 32 ? 2 * 4 * (blockThreads() / 32) * 4 : 0;
  }
  int64_t gradCombineBytes() const {
    return rowsPerBlock > 1 ? paramGrads() * n * 4 : 0;
  }
  /// The staged rows' ring (gradStages): [operand][step][vector of the
  /// thread's rows][thread] 16-byte vectors (operands x, dy and the
  /// residual), then [step][row of the step][statistic][thread] f32 (rstd,
  /// and LayerNorm's mean); each thread copies and reads only its own.
  int64_t gradStagedOperands() const { return residualElem ? 3 : 2; }
  int64_t gradStagedStats() const { return isLayerNorm() ? 2 : 1; }
  int64_t gradStepVectorBytes() const {
    return gradStagedOperands() * gradRowsPerStep * vecsPerThread *
           blockThreads() * 16;
  }
  int64_t gradStepBytes() const {
    return gradStepVectorBytes() +
           gradRowsPerStep * gradStagedStats() * blockThreads() * 4;
  }
  int64_t gradRingOffset() const {
    return llvm::alignTo(gradExchangeBytes() + gradCombineBytes(), 16);
  }
  int64_t gradRingBytes() const { return gradStages * gradStepBytes(); }
};

/// The spec of a row kernel for `op` (fusion.rms_norm, layer_norm, their
/// grads, add, mul or activation), or failure with why not in `why`.
FailureOr<RowKernelSpec> getRowKernelSpec(Operation *op, std::string &why);

/// Stages a norm gradient's rows through shared memory (gradStages): the
/// most steps, at most `maxStages`, that keep its gradCTAsPerSM CTAs on an
/// SM of `target`, at least 2; none where its vectors of dy, x and the
/// residual are not 16 bytes (cp.async's widest) or 2 do not fit.
void planNormGradStages(RowKernelSpec &spec, const TargetInfo &target,
                        int64_t maxStages);

/// Builds the kernel `name` in `module`. Arguments, all device memrefs viewed
/// flat (memref<?xT>), then the row count (index):
///   norms:   input, output, [weight], [bias], [mean], [rstd], rows
///   grads:   dy, x, [mean], rstd, [weight], [residual], dx, [partials], rows
///   binary:  lhs, rhs, output, rows
///   unary:   input, output, rows (fusion.activation)
/// A norm gradient's partials are [paramGrads][gridDim.x][n] f32: row group
/// u of the U = gridDim.x * rowsPerBlock groups visits rows u, u + U, ...,
/// and CTA c writes partial row c, the sum of its groups' columns (group 0's
/// plus group 1's, plus group 2's, ...).
gpu::GPUFuncOp buildRowKernel(OpBuilder &builder, Location loc,
                              gpu::GPUModuleOp module, StringRef name,
                              const RowKernelSpec &spec);

/// Builds the kernel `name` that sums a norm gradient's partial rows:
/// arguments partials, dweight and/or dbias ([n] f32), units (index, the
/// partial rows); CTA (x, y) sums columns [8 x, 8 x + 8) of parameter y,
/// lane l of warp w the partial rows 4 w + l / 8 + 64 k in order
/// (kReduceUnroll accumulators), then the threads' sums in order.
gpu::GPUFuncOp buildParamGradReduceKernel(OpBuilder &builder, Location loc,
                                          gpu::GPUModuleOp module,
                                          StringRef name,
                                          const RowKernelSpec &spec);

/// Sums the partial rows of a norm gradient's parameter gradients (`spec`:
/// their count, N and types): builds `<kernelName>_params`
/// (buildParamGradReduceKernel), launches it on the host function's chain
/// after the work so far, one CTA per kReduceColumns columns of each
/// gradient, and frees the partial rows (`operands`: the partials, the
/// gradients, the partial rows' count). The row family, the grad epilogues
/// and the attention backward share it.
void sumParamGradPartials(HostLowering &host, StringRef kernelName,
                          const RowKernelSpec &spec, ValueRange operands);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H
