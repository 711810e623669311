//===- MmaEngine.cpp - picking the engine of a target ---------------------===//

#include "MmaEngine.h"

using namespace mlir;
using namespace mlir::fusion;

std::unique_ptr<MmaEngine> mlir::fusion::createMmaEngine(const TargetInfo &target,
                                                         const MmaShape &shape,
                                                         std::string &whyNot) {
  switch (target.mma) {
  case MmaKind::Wgmma:
    return createSm90WgmmaEngine(shape);
  case MmaKind::Tcgen05:
    break;
  }
  whyNot = ("no MMA engine for " + target.chip + ": the " +
            stringifyMmaKind(target.mma) +
            " engine (tcgen05.mma into tensor memory) is not implemented yet")
               .str();
  return nullptr;
}
