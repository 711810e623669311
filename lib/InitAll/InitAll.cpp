//===- InitAll.cpp - register every fusion dialect, pass, pipeline --------===//

#include "fusion/InitAll.h"

#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/IR/FusionDialect.h"
#include "fusion/Dialect/Fusion/Transforms/Passes.h"
#include "fusion/Pipelines/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::fusion::registerFusionDialects(DialectRegistry &registry) {
  registry.insert<FusionDialect>();
}

void mlir::fusion::registerFusionPasses() {
  registerFusionConversionPasses();
  registerFusionTransformsPasses();
  registerFusionPipelines();
}
