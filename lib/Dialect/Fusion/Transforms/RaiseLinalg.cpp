//===- RaiseLinalg.cpp - raise linalg norms and matmuls to fusion ---------===//

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

void mlir::fusion::populateRaiseLinalgPatterns(RewritePatternSet &patterns) {}
