//===- FusedOpBuilder.cpp - building fused ops and reporting --------------===//

#include "FusedOpBuilder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::fusion;

FusedMatmulSpec mlir::fusion::plainMatmulSpec(MatmulOp matmul) {
  FusedMatmulSpec spec;
  spec.lhs = matmul.getLhs();
  spec.rhs = matmul.getRhs();
  spec.transposeLhs = matmul.getTransposeLhs();
  spec.transposeRhs = matmul.getTransposeRhs();
  spec.colBias = matmul.getBias();
  spec.outputType = matmul.getResult().getType();
  return spec;
}

std::string mlir::fusion::whyNoElementwiseEpilogue(FusedMatmulOp op) {
  EpilogueKind epi = op.getEpilogue();
  if (epi != EpilogueKind::none && epi != EpilogueKind::row_scale)
    return ("the GEMM has the " + stringifyEpilogueKind(epi) + " epilogue")
        .str();
  if (op.getResidual())
    return "the GEMM adds a residual";
  if (op.getActivation() || op.getUp())
    return "the GEMM already applies an activation";
  if (op.getRopeCos())
    return "the GEMM already applies a rope";
  if (op.getColScale())
    return "the GEMM already scales its columns";
  return "";
}

FusedMatmulSpec mlir::fusion::fusedMatmulSpec(FusedMatmulOp op) {
  FusedMatmulSpec spec;
  spec.lhs = op.getLhs();
  spec.rhs = op.getRhs();
  spec.transposeLhs = op.getTransposeLhs();
  spec.transposeRhs = op.getTransposeRhs();
  spec.residual = op.getResidual();
  spec.rowScale = op.getRowScale();
  spec.colBias = op.getColBias();
  spec.colScale = op.getColScale();
  spec.colSum = op.getColSum();
  spec.normWeight = op.getNormWeight();
  spec.normBias = op.getNormBias();
  spec.normInput = op.getNormInput();
  spec.mean = op.getMean();
  spec.rstd = op.getRstd();
  spec.rowDot = op.getRowDot();
  spec.rowDotShift = op.getRowDotShift();
  spec.rowDotSum = op.getRowDotSum();
  spec.postResidual = op.getPostResidual();
  spec.activation = op.getActivation();
  spec.up = op.getUp();
  spec.ropeCos = op.getRopeCos();
  spec.ropeSin = op.getRopeSin();
  spec.ropeHeadDim = op.getRopeHeadDim();
  spec.ropeInterleaved = op.getRopeInterleaved();
  spec.prologue = op.getPrologue();
  spec.epilogue = op.getEpilogue();
  if (FloatAttr eps = op.getPrologueEpsilonAttr())
    spec.prologueEpsilon = eps.getValueAsDouble();
  if (FloatAttr eps = op.getEpsilonAttr())
    spec.epsilon = eps.getValueAsDouble();
  spec.saveStats = op.getSaveStats();
  spec.withBiasGrad = op.getWithBiasGrad();
  spec.normalizedInput = op.getNormalizedInput();
  spec.saveNormInput = op.getSaveNormInput();
  spec.normGroupSize = op.getNormGroupSize();
  spec.outputType = op.getOutput().getType();
  for (Value extra : op.getExtras())
    spec.extraTypes.push_back(extra.getType());
  return spec;
}

FusedMatmulOp mlir::fusion::buildFusedMatmul(OpBuilder &b, Location loc,
                                             const FusedMatmulSpec &s) {
  auto f32Attr = [&](std::optional<double> v) -> FloatAttr {
    return v ? b.getF32FloatAttr(*v) : FloatAttr();
  };
  auto unit = [&](bool v) -> UnitAttr { return v ? b.getUnitAttr() : UnitAttr(); };
  return FusedMatmulOp::create(
      b, loc, s.outputType, s.saveNormInput ? s.outputType : Type(),
      s.extraTypes, s.lhs, s.rhs, s.residual, s.rowScale, s.colBias, s.colScale,
      s.colSum, s.normWeight, s.normBias, s.normInput, s.mean, s.rstd, s.rowDot,
      s.rowDotShift, s.rowDotSum, s.postResidual, s.up, s.ropeCos, s.ropeSin,
      PrologueKindAttr::get(b.getContext(), s.prologue),
      EpilogueKindAttr::get(b.getContext(), s.epilogue),
      f32Attr(s.prologueEpsilon), f32Attr(s.epsilon),
      s.normGroupSize ? b.getI64IntegerAttr(*s.normGroupSize) : IntegerAttr(),
      s.activation ? ActivationAttr::get(b.getContext(), *s.activation)
                   : ActivationAttr(),
      unit(s.transposeLhs), unit(s.transposeRhs), unit(s.saveStats),
      unit(s.withBiasGrad), unit(s.normalizedInput), unit(s.saveNormInput),
      s.ropeHeadDim ? b.getI64IntegerAttr(*s.ropeHeadDim) : IntegerAttr(),
      unit(s.ropeInterleaved));
}

SmallVector<Operation *> mlir::fusion::collectNorms(Operation *root) {
  SmallVector<Operation *> norms;
  root->walk([&](Operation *op) {
    if (isa<RMSNormOp, LayerNormOp>(op))
      norms.push_back(op);
  });
  return norms;
}

void mlir::fusion::remark(bool report, Operation *op, const Twine &message) {
  if (report)
    op->emitRemark() << op->getName().getStringRef() << " " << message;
}
