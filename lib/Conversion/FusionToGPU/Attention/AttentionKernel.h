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

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNEL_H
