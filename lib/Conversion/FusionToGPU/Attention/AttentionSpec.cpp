//===- AttentionSpec.cpp - what the attention kernel takes ----------------===//

#include "AttentionSpec.h"

#include "fusion/Target/NVPTX/AttentionKernelLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fusion;

std::string mlir::fusion::typeName(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  t.print(os);
  return text;
}

/// What both attention kernels require of the op's operands: q, k, v and
/// the output of one 16-bit float type. Empty when they do,
/// else why not.
template <typename OpTy> static std::string checkOperands(OpTy op) {
  Type elem = cast<ShapedType>(op.getQuery().getType()).getElementType();
  if (!elem.isBF16() && !elem.isF16())
    return llvm::formatv("expected bf16 or f16 query, key, value and output, "
                         "but got query of {0}",
                         typeName(elem));
  for (auto [name, t] : {std::pair<StringRef, Value>{"key", op.getKey()},
                         {"value", op.getValue()},
                         {"output", op.getOutput()}}) {
    Type other = cast<ShapedType>(t.getType()).getElementType();
    if (other != elem)
      return llvm::formatv("expected {0} of {1} (the query's element type), "
                           "but got {2}",
                           name, typeName(elem), typeName(other));
  }
  return "";
}

FailureOr<AttentionKernelSpec>
mlir::fusion::getAttentionKernelSpec(GDPAOp op, const TargetInfo &target,
                                     std::string &whyNot) {
  auto fail = [&](std::string why) -> FailureOr<AttentionKernelSpec> {
    whyNot = std::move(why);
    return failure();
  };
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  std::string why = checkOperands(op);
  if (!why.empty())
    return fail(why);
  Type elem = q.getElementType();
  AttentionKernelSpec s;
  s.elemType = elem;
  if (Value residual = op.getResidual()) {
    // Read as 16-bit pairs beside O's accumulator.
    Type r = cast<ShapedType>(residual.getType()).getElementType();
    if (r != elem)
      return fail(llvm::formatv("expected residual of {0} (the output's element "
                                "type), but got {1}",
                                typeName(elem), typeName(r)));
    s.residualType = r;
    s.residualIsQuery = residual == op.getQuery();
  }
  if (Value offsets = op.getOffsets()) {
    s.jagged = true;
    s.offsetsType = cast<ShapedType>(offsets.getType()).getElementType();
  }
  s.headDim = q.getDimSize(q.getRank() - 1);
  s.valueDim = v.getDimSize(3);
  s.kvLen = k.getDimSize(1);
  // D, Dv, L_kv, tensor and shared memory (fusion-plan-kernels asks too).
  why = whyNoAttentionKernel(target, AttentionKernelShape{s.headDim, s.valueDim, s.kvLen});
  if (!why.empty())
    return fail(why);
  s.kvTile = llvm::alignTo(s.kvLen, 64);
  s.activation = op.getActivation();
  s.scale = op.getScale().convertToDouble();
  static_cast<AttentionLayout &>(s) = planAttentionLayout(target, s);
  return s;
}

FailureOr<AttentionKernelSpec>
mlir::fusion::getNormAttentionKernelSpec(NormAttentionOp op,
                                         const TargetInfo &target,
                                         std::string &whyNot) {
  auto fail = [&](std::string why) -> FailureOr<AttentionKernelSpec> {
    whyNot = std::move(why);
    return failure();
  };
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  std::string why = checkOperands(op);
  if (!why.empty())
    return fail(why);
  Type elem = q.getElementType();
  AttentionKernelSpec s;
  s.norms = true;
  s.elemType = elem;
  // Jagged q [T, H, D] (offsets), else [B, L_q, H, D].
  if (Value offsets = op.getOffsets()) {
    s.jagged = true;
    s.offsetsType = cast<ShapedType>(offsets.getType()).getElementType();
  }
  s.heads = q.getDimSize(q.getRank() - 2);
  s.headDim = s.valueDim = q.getDimSize(q.getRank() - 1);
  s.kvLen = k.getDimSize(1);
  s.saves = !op.getSaved().empty();
  why = whyNoNormAttentionKernel(
      target, NormAttentionShape{elem, s.jagged, s.heads, s.headDim, s.kvLen,
                                 s.saves});
  if (!why.empty())
    return fail(why);
  s.kvTile = llvm::alignTo(s.kvLen, 64);
  s.activation = op.getActivation();
  s.scale = op.getScale().convertToDouble();
  s.lnEpsilon = op.getLnEpsilon().convertToDouble();
  s.rmsEpsilon = op.getRmsEpsilon().convertToDouble();
  auto elemOf = [](Value v) {
    return v ? cast<ShapedType>(v.getType()).getElementType() : Type();
  };
  s.lnWeightType = elemOf(op.getLnWeight());
  s.lnBiasType = elemOf(op.getLnBias());
  s.rmsWeightType = elemOf(op.getRmsWeight());
  static_cast<AttentionLayout &>(s) = planAttentionLayout(target, s);
  why = whyNoAttentionTensorMemory(target, s);
  if (!why.empty())
    return fail(why);
  if (s.sharedMemoryBytes() > target.smemPerBlockOptin)
    return fail(llvm::formatv(
        "needs {0} bytes of shared memory for D = {1} and a key/value length "
        "of {2}, but {3} has {4}",
        s.sharedMemoryBytes(), s.headDim, s.kvLen, target.chip,
        target.smemPerBlockOptin));
  return s;
}

SmallVector<AttentionArg>
mlir::fusion::attentionArgs(const AttentionKernelSpec &s) {
  SmallVector<AttentionArg> args = {
      AttentionArg::TmaQ,  AttentionArg::TmaK,     AttentionArg::TmaV,
      AttentionArg::TmaOut, AttentionArg::Batch, AttentionArg::QueryLen,
      AttentionArg::Heads};
  if (s.jagged)
    args.append({AttentionArg::Offsets, AttentionArg::WindowBatch, AttentionArg::Output});
  if (s.residualType)
    args.push_back(AttentionArg::Residual);
  if (!s.norms)
    return args;
  if (s.lnWeightType)
    args.push_back(AttentionArg::LnWeight);
  if (s.lnBiasType)
    args.push_back(AttentionArg::LnBias);
  if (s.rmsWeightType)
    args.push_back(AttentionArg::RmsWeight);
  args.append({AttentionArg::LnMean, AttentionArg::LnRstd, AttentionArg::RmsRstd});
  if (s.saves)
    args.append({AttentionArg::TmaLnQ, AttentionArg::TmaHidden});
  if (s.saves && s.jagged)
    args.append({AttentionArg::LnQFlat, AttentionArg::HiddenFlat});
  return args;
}

Value mlir::fusion::asBatchOfOne(ImplicitLocOpBuilder &b, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  int64_t rank = type.getRank();
  if (rank != 3 && rank != 1)
    return mem;
  SmallVector<int64_t> shape = {1};
  llvm::append_range(shape, type.getShape());
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(memref::DimOp::create(b, mem, d).getResult());
  SmallVector<ReassociationIndices> groups = {{0, 1}};
  for (int64_t d = 2; d <= rank; ++d)
    groups.push_back({d});
  return memref::ExpandShapeOp::create(
      b, MemRefType::get(shape, type.getElementType()), mem, groups, sizes);
}
