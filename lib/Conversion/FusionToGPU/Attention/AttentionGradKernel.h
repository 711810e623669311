//===- AttentionGradKernel.h - the gdpa_grad kernel -------------*- C++ -*-===//
//
// The attention backward's device side: buildAttentionGradKernel emits the
// kernel AttentionGradKernel.cpp describes, with the arguments
// AttentionGradArg lists (AttentionGradSpec.h).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADKERNEL_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADKERNEL_H

#include "AttentionGradSpec.h"

#include "../Mma/MmaEngine.h"

namespace mlir::fusion {

/// Builds the kernel `name` of `s` at the end of `module`, around the MMA
/// engine of `target` (which must have one).
gpu::GPUFuncOp buildAttentionGradKernel(OpBuilder &builder, Location loc,
                                        gpu::GPUModuleOp module, StringRef name,
                                        const AttentionGradKernelSpec &s,
                                        const TargetInfo &target);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADKERNEL_H
