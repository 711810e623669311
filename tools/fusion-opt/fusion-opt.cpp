//===- fusion-opt.cpp - the fusion optimizer driver -----------------------===//
//
// mlir-opt with the fusion dialect, passes and pipelines added: every
// upstream dialect and pass is available, so one tool runs the whole flow
// from the fusion dialect down to PTX.
//
//===----------------------------------------------------------------------===//

#include "fusion/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fusion::registerFusionPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::fusion::registerFusionDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fusion optimizer: normalization-fusing MLIR compiler\n",
      registry));
}
