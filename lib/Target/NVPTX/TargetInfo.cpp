//===- TargetInfo.cpp - hardware limits of the supported GPUs -------------===//
//
// The table of limits per chip is inline in TargetInfo.h (the dialect's
// verifiers read it too); its sources are listed there.
//
//===----------------------------------------------------------------------===//

#include "fusion/Target/NVPTX/TargetInfo.h"

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::fusion;

std::optional<TargetInfo> mlir::fusion::lookupTargetInfo(Operation *op) {
  TargetAttr target = TargetAttr::lookup(op);
  if (!target)
    return std::nullopt;
  return getTargetInfo(target.getChip());
}

llvm::StringRef mlir::fusion::stringifyMmaKind(MmaKind kind) {
  switch (kind) {
  case MmaKind::Wgmma:
    return "wgmma";
  case MmaKind::Tcgen05:
    return "tcgen05";
  }
  return "unknown";
}
