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
//     fusion passes leave standing): the same row groups compute dx from
//     dy, x and the saved statistics, and accumulate each thread's columns
//     of dweight / dbias over the rows it visits (a residual operand is
//     read beside dy and added to dx before it is rounded; fusion-plan-
//     kernels folds a residual branch's fusion.add into it); a persistent
//     grid of at
//     most kMaxGradBlocks CTAs writes one partial row per row group, and a
//     second kernel sums the partial rows of each column in a fixed order
//     (the parameter gradients are bitwise the same run to run);
//   - fusion.add and fusion.mul with rhs broadcast (same shape, a row vector,
//     a column, one value): a flat element-wise kernel, 16-byte vectors.
// Every operand is viewed as [rows, n]: the leading dimensions flattened,
// `n` the innermost size, which must be static (the launch shape and the
// vector width depend on it); rows may be dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H

#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <string>

namespace mlir::fusion {

enum class RowOpKind { RMSNorm, LayerNorm, RMSNormGrad, LayerNormGrad, Add, Mul };

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
  Broadcast broadcast = Broadcast::Same;

  // Norms: a group of threadsPerRow threads per row, each holding
  // vecsPerThread vectors; rowsPerBlock groups per CTA.
  int64_t threadsPerRow = 32, vecsPerThread = 1, rowsPerBlock = 1;
  // Element-wise: vectors per thread (coalesced, blockThreads apart).
  static constexpr int64_t kVectorsPerThread = 4;
  // Norm gradients: the persistent grid's size limit (a constant, so the
  // partial rows and their sums do not depend on the device), and the
  // reduction kernel's shape: columns per CTA, warps splitting the partial
  // rows.
  static constexpr int64_t kMaxGradBlocks = 512, kReduceColumns = 32,
                           kReduceWarps = 8;

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
  /// Norm gradients: the parameter gradients computed (0, 1 or 2).
  int64_t paramGrads() const { return weightGrad + biasGrad; }
  int64_t chunks() const { return n / vec; }
  int64_t blockThreads() const {
    return isNorm() ? threadsPerRow * rowsPerBlock : 256;
  }
  /// Dynamic shared memory: one f32 slot per warp for each of the norm's
  /// two reductions (none when a row fits one warp).
  int64_t sharedMemoryBytes() const {
    if (!isNorm() || threadsPerRow <= 32)
      return 0;
    return 2 * (blockThreads() / 32) * 4 + 16;
  }
};

/// The spec of a row kernel for `op` (fusion.rms_norm, layer_norm, add or
/// mul), or failure with why not in `why`.
FailureOr<RowKernelSpec> getRowKernelSpec(Operation *op, std::string &why);

/// Builds the kernel `name` in `module`. Arguments, all device memrefs viewed
/// flat (memref<?xT>), then the row count (index):
///   norms:   input, output, [weight], [bias], [mean], [rstd], rows
///   grads:   dy, x, [mean], rstd, [weight], [residual], dx, [partials], rows
///   binary:  lhs, rhs, output, rows
/// A norm gradient's partials are [paramGrads][units][n] f32, units =
/// gridDim.x * rowsPerBlock (row group u visits rows u, u + units, ...).
gpu::GPUFuncOp buildRowKernel(OpBuilder &builder, Location loc,
                              gpu::GPUModuleOp module, StringRef name,
                              const RowKernelSpec &spec);

/// Builds the kernel `name` that sums a norm gradient's partial rows:
/// arguments partials, dweight and/or dbias ([n] f32), units (index); CTA
/// (x, y) sums columns [32 x, 32 x + 32) of parameter y, each of its 8 warps
/// every 8th partial row in order, then the warps' sums in order.
gpu::GPUFuncOp buildParamGradReduceKernel(OpBuilder &builder, Location loc,
                                          gpu::GPUModuleOp module,
                                          StringRef name,
                                          const RowKernelSpec &spec);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ROWS_ROWSPEC_H
