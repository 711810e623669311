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
  whyNot = ("no register-accumulator MMA engine for " + target.chip +
            ": its " + stringifyMmaKind(target.mma) +
            " engine accumulates in tensor memory, which this kernel family "
            "is not written for yet")
               .str();
  return nullptr;
}

std::unique_ptr<TensorMemoryMmaEngine>
mlir::fusion::createTensorMemoryMmaEngine(const TargetInfo &target,
                                          const MmaShape &shape,
                                          std::string &whyNot) {
  switch (target.mma) {
  case MmaKind::Tcgen05:
    return createSm100Tcgen05Engine(shape, whyNot);
  case MmaKind::Wgmma:
    break;
  }
  whyNot = ("no tensor-memory MMA engine for " + target.chip + ": its " +
            stringifyMmaKind(target.mma) + " engine accumulates in registers")
               .str();
  return nullptr;
}
