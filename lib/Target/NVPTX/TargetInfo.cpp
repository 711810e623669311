//===- TargetInfo.cpp - hardware limits of the supported GPUs -------------===//
//
// Sources: CUDA C Programming Guide, "Compute capabilities" (shared memory per
// block opt-in: 227 KB on 9.0 and 10.0, 228 KB per SM with 1 KB reserved
// per resident block; portable cluster size 8, up to 16 with
// the non-portable attribute), PTX ISA "wgmma.mma_async" (N up to 256 in
// multiples of 8) and "tcgen05.mma" (up to 512 TMEM columns).
//
//===----------------------------------------------------------------------===//

#include "fusion/Target/NVPTX/TargetInfo.h"

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::fusion;

std::optional<TargetInfo> mlir::fusion::getTargetInfo(llvm::StringRef chip) {
  constexpr int64_t kSmem227KiB = 227 * 1024, kSmem228KiB = 228 * 1024;
  if (chip == "sm_90a")
    return TargetInfo{"sm_90a", "+ptx81", MmaKind::Wgmma, kSmem227KiB, kSmem228KiB, 1024, 8, 16, 256, 4, 64,
                      /*normEpilogueWarps=*/true};
  if (chip == "sm_100a")
    return TargetInfo{"sm_100a", "+ptx86", MmaKind::Tcgen05, kSmem227KiB, kSmem228KiB, 1024, 8, 16, 512, 16, 16,
                      /*normEpilogueWarps=*/false};
  return std::nullopt;
}

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
