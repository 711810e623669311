//===- AttentionGradSpec.cpp - what the attention backward takes ----------===//

#include "AttentionGradSpec.h"
#include "AttentionSpec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fusion;

FailureOr<AttentionGradKernelSpec>
mlir::fusion::getAttentionGradKernelSpec(GDPAGradOp op, const TargetInfo &target,
                                         std::string &whyNot) {
  auto fail = [&](std::string why) -> FailureOr<AttentionGradKernelSpec> {
    whyNot = std::move(why);
    return failure();
  };
  auto elemOf = [](Value v) { return cast<ShapedType>(v.getType()).getElementType(); };
  Type elem = elemOf(op.getQuery());
  if (!elem.isBF16() && !elem.isF16())
    return fail(llvm::formatv("expected bf16 or f16 grad, query, key, value and "
                              "gradients, but got query of {0}",
                              typeName(elem)));
  SmallVector<std::pair<StringRef, Value>> operands = {
      {"grad", op.getGrad()},           {"key", op.getKey()},
      {"value", op.getValue()},         {"query_grad", op.getQueryGrad()},
      {"key_grad", op.getKeyGrad()},    {"value_grad", op.getValueGrad()}};
  if (Value residual = op.getResidual())
    operands.push_back({"residual", residual});
  if (Value x = op.getRmsInput())
    operands.push_back({"rms_norm_grad input", x});
  for (auto [name, v] : operands)
    if (elemOf(v) != elem)
      return fail(llvm::formatv("expected {0} of {1} (the query's element type), "
                                "but got {2}",
                                name, typeName(elem), typeName(elemOf(v))));
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  AttentionGradShape shape{elem, static_cast<bool>(op.getOffsets()),
                           q.getShape().back(), v.getShape().back(),
                           k.getDimSize(1)};
  shape.rmsPrologue = op.hasRmsPrologue();
  shape.heads = q.getShape()[q.getRank() - 2];
  if (Value residual = op.getResidual()) {
    shape.residual = true;
    shape.residualIsGrad = residual == op.getGrad();
  }
  std::string why = whyNoAttentionGradKernel(target, shape);
  if (!why.empty())
    return fail(why);
  AttentionGradKernelSpec s;
  s.elemType = elem;
  s.headDim = shape.headDim;
  s.valueDim = shape.valueDim;
  s.kvLen = shape.kvLen;

  s.activation = op.getActivation();
  s.scale = op.getScale().convertToDouble();
  if (Value offsets = op.getOffsets()) {
    s.jagged = true;
    s.offsetsType = elemOf(offsets);
  }
  // At most 230400 bytes (D = Dv = 256, two stages): the limits above
  // keep one stage inside every Hopper's 227 KB.
  if (shape.rmsPrologue) {
    s.rmsPrologue = true;
    if (Value w = op.getRmsWeight())
      s.rmsWeightType = elemOf(w);
  }
  static_cast<AttentionGradLayout &>(s) = planAttentionGradLayout(target, shape);
  // The producer shared with the tcgen05 kernel and the prologue walk the
  // tiles once per pass of keys: column passes are the sm_90a consumers'
  // alone (whyNoAttentionGradKernel keeps it so).
  assert(s.columnPasses() == 1 || (!s.tensorMemory && !s.rmsPrologue));
  if (shape.residual) {
    s.residual = true;
    s.residualInStage = shape.residualInStage(s.tensorMemory);
  }
  if (op.getGradResidual()) {
    // The stage's dO block is dO itself, or with the prologue the dh it
    // becomes: dq += it (D = Dv, the verifier's).
    if (s.tensorMemory)
      return fail("expected sm_90a for grad_residual (the sm_100a backward "
                  "reads its residual from global memory)");
    if (s.jagged)
      return fail("expected dense q for grad_residual (the jagged kernel "
                  "copies a residual operand into the rows outside every "
                  "sequence), but got jagged q (offsets)");
    s.residual = s.residualInStage = s.gradResidual = true;
  }
  // The layout dropped P^T's buffer only where the kernel keeps P^T in
  // registers (planAttentionGradLayout's predicate over the shape; this
  // one over the spec): else P^T would overwrite dS^T.
  if (!s.sharedP && !s.operandsInRegisters())
    return fail("internal error: the layout has no P^T buffer but the kernel "
                "reads P^T from shared memory");
  return s;
}

Value mlir::fusion::dqPartialRows(ImplicitLocOpBuilder &b, const AttentionGradKernelSpec &s,
                                  Value batch, Value queryLen) {
  Value tile = arith::ConstantIndexOp::create(b, s.tileQ());
  if (s.jagged)
    return arith::AddIOp::create(b, queryLen, arith::MulIOp::create(b, batch, tile));
  Value tiles = arith::CeilDivUIOp::create(b, queryLen, tile);
  return arith::MulIOp::create(b, arith::MulIOp::create(b, batch, tiles), tile);
}
