//===- fusion-opt.cpp - the fusion optimizer driver -----------------------===//
//
// mlir-opt with the fusion dialect, passes and pipelines added: every
// upstream dialect and pass is available, so one tool runs the whole flow
// from the fusion dialect down to PTX. The input is checked for what
// libMLIR 22's own parsers crash on before it is parsed
// (fusion/Tools/UpstreamParserGuard.h).
//
//===----------------------------------------------------------------------===//

#include "fusion/InitAll.h"
#include "fusion/Tools/UpstreamParserGuard.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

/// False (after an error naming file:line:col) where the input holds what
/// libMLIR's parser would crash on.
static bool checkInput(const llvm::MemoryBuffer &buffer) {
  auto hazard = mlir::fusion::findUpstreamParserHazard(buffer.getBuffer());
  if (!hazard)
    return true;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(buffer.getBuffer(),
                                       buffer.getBufferIdentifier()),
      llvm::SMLoc());
  sourceMgr.PrintMessage(
      llvm::SMLoc::getFromPointer(buffer.getBufferStart() + hazard->offset),
      llvm::SourceMgr::DK_Error, hazard->message);
  return false;
}

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fusion::registerFusionPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::fusion::registerFusionDialects(registry);

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "fusion optimizer: normalization-fusing MLIR compiler\n",
      registry);
  if (inputFilename != "-") {
    // Checked here, then read again by MlirOptMain (which handles every
    // option).
    auto file = llvm::MemoryBuffer::getFile(inputFilename, /*IsText=*/true);
    if (file && !checkInput(**file))
      return EXIT_FAILURE;
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  }
  // Standard input can be read once: checked and processed from the buffer.
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::WithColor::error() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (!checkInput(*input))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::WithColor::error() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     mlir::MlirOptMainConfig::createFromCLOptions())))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
