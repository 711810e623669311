//===- AttentionKernel.h - the gdpa kernel ----------------------*- C++ -*-===//
//
// The attention kernel family's device side: buildAttentionKernel emits the
// kernel AttentionKernel.cpp describes, with the arguments AttentionArg
// lists (AttentionSpec.h).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNEL_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNEL_H

#include "AttentionSpec.h"

#include "../Mma/MmaEngine.h"

namespace mlir::fusion {

/// Builds the kernel `name` of `s` at the end of `module`, around the MMA
/// engine of `target` (which must have one).
gpu::GPUFuncOp buildAttentionKernel(OpBuilder &builder, Location loc,
                                    gpu::GPUModuleOp module, StringRef name,
                                    const AttentionKernelSpec &s,
                                    const TargetInfo &target);

/// The window kernel of a jagged fusion.gdpa: for every 128-token window w
/// of the T query tokens, the batch whose tokens include the window's first
/// (offsets[b] <= 128 w < offsets[b + 1]), or B past offsets[B]. Thread b of
/// B + 1 (kWindowThreads a CTA) writes the windows that start in batch b.
/// Arguments: offsets (memref<?xi32|i64>), the windows' batches
/// (memref<?xi32>, ceil(T / 128)), B, T.
gpu::GPUFuncOp buildWindowBatchKernel(OpBuilder &builder, Location loc,
                                      gpu::GPUModuleOp module, StringRef name,
                                      Type offsetsType);
constexpr int64_t kWindowThreads = 256;

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNEL_H
