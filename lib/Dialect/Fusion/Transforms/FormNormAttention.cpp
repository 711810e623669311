//===- FormNormAttention.cpp - FlashNormAttention formation ---------------===//

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

void mlir::fusion::applyFormNormAttention(ModuleOp module, bool report) {}
