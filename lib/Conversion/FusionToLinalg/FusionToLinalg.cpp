//===- FusionToLinalg.cpp - the convert-fusion-to-linalg pass -------------===//
//
// Aggregates the reference-lowering patterns of each op family; the patterns
// themselves live in NormAndMatmulToLinalg.cpp, AttentionToLinalg.cpp,
// FusedOpsToLinalg.cpp and RopeToLinalg.cpp, all built from the helpers in
// TensorMath.h.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/FusionToLinalg/FusionToLinalg.h"
#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/IR/FusionDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_CONVERTFUSIONTOLINALGPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;
using namespace mlir::fusion;

void mlir::fusion::populateFusionToLinalgPatterns(RewritePatternSet &patterns) {
  populateNormAndMatmulToLinalgPatterns(patterns);
  populateAttentionToLinalgPatterns(patterns);
  populateFusedOpsToLinalgPatterns(patterns);
  populateRopeToLinalgPatterns(patterns);
}

namespace {
struct ConvertFusionToLinalgPass
    : fusion::impl::ConvertFusionToLinalgPassBase<ConvertFusionToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<FusionDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    populateFusionToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
