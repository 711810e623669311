//===- KernelFamily.h - what a kernel family provides -----------*- C++ -*-===//
//
// convert-fusion-to-gpu lowers each planned op of a function to one kernel
// of a family: the fused GEMM (Gemm/) today, attention and the backward
// kernels beside it. A family says which ops it takes, whether it can build
// a kernel for one on the module's target (and why not), and builds the
// kernel (through the target's MmaEngine) and its host launch. The pass
// dispatches on the family; it knows no kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_KERNELFAMILY_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_KERNELFAMILY_H

#include "HostLowering.h"

#include "fusion/Target/NVPTX/TargetInfo.h"

#include <memory>
#include <string>

namespace mlir::fusion {

class KernelFamily {
public:
  virtual ~KernelFamily() = default;
  /// "fused GEMM", for diagnostics.
  virtual StringRef name() const = 0;
  /// Whether `op` is one of the family's ops.
  virtual bool matches(Operation *op) const = 0;
  /// Whether a kernel for `op` can be built on `target`; if not, why (a
  /// message that follows "cannot generate an <chip> kernel: ").
  virtual LogicalResult check(Operation *op, const TargetInfo &target,
                              std::string &whyNot) const = 0;
  /// Builds the kernel `kernelName` of a checked `op` in `host.kernels` and
  /// launches it on `host.chain`, its operands and results from `host.map`.
  virtual void lower(HostLowering &host, Operation *op,
                     const TargetInfo &target, StringRef kernelName) const = 0;
  /// Whether the kernel of `op` writes its result `index`. The pass gives a
  /// buffer only to the results a kernel writes; a family may skip a result
  /// nothing reads (a norm's unused statistics).
  virtual bool writesResult(Operation *op, unsigned index) const {
    return true;
  }
};

/// The families, in the order the pass tries them.
/// prefetchNextA: convert-fusion-to-gpu's l2-prefetch-a (the forward norm
/// epilogues' producers prefetch the next tile's A into L2).
std::unique_ptr<KernelFamily> createGemmKernelFamily(bool prefetchNextA);
/// Standalone norms and element-wise ops (Rows/).
/// normGradStages: convert-fusion-to-gpu's norm-grad-stages (0: no norm
/// gradient stages its rows; -1: those beside a GEMM; N: all, at most N).
std::unique_ptr<KernelFamily> createRowKernelFamily(int64_t normGradStages);
/// fusion.gdpa with short keys and values (Attention/).
std::unique_ptr<KernelFamily> createAttentionKernelFamily();
/// fusion.gdpa_grad with short keys and values (Attention/).
std::unique_ptr<KernelFamily> createAttentionGradKernelFamily();

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_KERNELFAMILY_H
