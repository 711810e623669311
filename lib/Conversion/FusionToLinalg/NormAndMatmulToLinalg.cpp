#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "mlir/IR/PatternMatch.h"
void mlir::fusion::populateNormAndMatmulToLinalgPatterns(RewritePatternSet &) {}
