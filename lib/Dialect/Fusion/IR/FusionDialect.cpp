//===- FusionDialect.cpp - fusion dialect and attributes ------------------===//

#include "fusion/Dialect/Fusion/IR/FusionDialect.h"
#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fusion;

#include "fusion/Dialect/Fusion/IR/FusionDialect.cpp.inc"
#include "fusion/Dialect/Fusion/IR/FusionEnums.cpp.inc"

/// Parses the keyword of a case of an enum; an unknown one is one error that
/// names `what` and lists the cases, e.g. "expected the epilogue to be one
/// of none, row_scale, ..., but got 'softmax'".
template <typename EnumT, typename Symbolize, typename Stringify>
static ParseResult parseCaseKeyword(AsmParser &parser, EnumT &value,
                                    StringRef what, Symbolize symbolize,
                                    Stringify stringify, uint32_t maxValue) {
  auto cases = [&] {
    std::string list;
    for (uint32_t v = 0; v <= maxValue; ++v)
      list += (v ? ", " : "") + stringify(static_cast<EnumT>(v)).str();
    return list;
  };
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseOptionalKeyword(&keyword)))
    return parser.emitError(loc) << "expected " << what << " to be one of "
                                 << cases() << " (a bare keyword)";
  std::optional<EnumT> parsed = symbolize(keyword);
  if (!parsed)
    return parser.emitError(loc) << "expected " << what << " to be one of "
                                 << cases() << ", but got '" << keyword << "'";
  value = *parsed;
  return success();
}

#define FUSION_CASE_KEYWORD(Enum, what)                                        \
  static ParseResult parse##Enum##Keyword(AsmParser &parser, Enum &value) {   \
    return parseCaseKeyword(                                                   \
        parser, value, what, [](StringRef s) { return symbolize##Enum(s); },  \
        [](Enum e) { return stringify##Enum(e); }, getMaxEnumValFor##Enum());  \
  }                                                                            \
  static void print##Enum##Keyword(AsmPrinter &printer, Enum value) {         \
    printer << stringify##Enum(value);                                         \
  }
FUSION_CASE_KEYWORD(Activation, "the activation")
FUSION_CASE_KEYWORD(PrologueKind, "the prologue")
FUSION_CASE_KEYWORD(EpilogueKind, "the epilogue")
#undef FUSION_CASE_KEYWORD

#define GET_ATTRDEF_CLASSES
#include "fusion/Dialect/Fusion/IR/FusionAttrs.cpp.inc"

void FusionDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fusion/Dialect/Fusion/IR/FusionOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fusion/Dialect/Fusion/IR/FusionAttrs.cpp.inc"
      >();
}

/// The shared memory a kernel configuration asks for, against the limit of
/// the enclosing module's target (none to check without one). Its other
/// fields are the generator's to refuse (convert-fusion-to-gpu names what it
/// handles); its layout arithmetic saturates (GemmKernelLayout.h), so a
/// configuration whose bytes overflow never passes the generator's check
/// against smem_bytes.
static LogicalResult verifyKernelConfigForTarget(Operation *op,
                                                 KernelConfigAttr config) {
  TargetAttr targetAttr = TargetAttr::lookup(op);
  if (!targetAttr)
    return success();
  std::optional<TargetInfo> target = getTargetInfo(targetAttr.getChip());
  if (!target)
    return success();
  if (config.getSmemBytes() > target->smemPerBlockOptin)
    return op->emitOpError()
           << "expected a kernel configuration with smem_bytes <= "
           << target->smemPerBlockOptin << " (the " << target->chip
           << " opt-in shared memory per CTA), but got smem_bytes = "
           << config.getSmemBytes();
  return success();
}

/// On a function's argument: `fusion.weight` (unit) or `fusion.prepared`
/// (the index of a prepared value, an integer >= 0).
LogicalResult FusionDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  if (attr.getName() == kWeightArgAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "expected '" << kWeightArgAttrName
                             << "' on argument " << argIndex
                             << " to be a unit attribute, but got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPreparedArgAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getValue().isNegative())
      return op->emitError() << "expected '" << kPreparedArgAttrName
                             << "' on argument " << argIndex
                             << " to be an integer index >= 0, but got "
                             << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown fusion dialect argument attribute '"
                         << attr.getName().getValue() << "' on argument "
                         << argIndex;
}

/// `fusion.target` may only sit on a module, and must hold a target.
LogicalResult FusionDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == KernelConfigAttr::getAttrName() ||
      attr.getName() == KernelConfigAttr::getSmallMAttrName() ||
      attr.getName() == KernelConfigAttr::getDecodeAttrName()) {
    if (!isa<KernelConfigAttr>(attr.getValue()))
      return op->emitError() << "expected '" << attr.getName().getValue()
                             << "' to be a #fusion.kernel_config attribute, "
                                "but got "
                             << attr.getValue();
    if (!isa<FusedMatmulOp>(op))
      return op->emitError() << "expected '" << attr.getName().getValue()
                             << "' on a fusion.fused_matmul, but it is on '"
                             << op->getName() << "'";
    // The small-M body beside the main one; the decode body beside both.
    struct Beside {
      StringRef attr, needs, why;
    };
    for (Beside rule : {Beside{KernelConfigAttr::getSmallMAttrName(),
                               KernelConfigAttr::getAttrName(),
                               "the main kernel's configuration"},
                        Beside{KernelConfigAttr::getDecodeAttrName(),
                               KernelConfigAttr::getSmallMAttrName(),
                               "the decode body is the kernel's third"}})
      if (attr.getName() == rule.attr && !op->hasAttr(rule.needs))
        return op->emitError()
               << "expected '" << rule.attr << "' beside a '" << rule.needs
               << "' (" << rule.why << "), but got none";
    return verifyKernelConfigForTarget(
        op, cast<KernelConfigAttr>(attr.getValue()));
  }
  if (attr.getName() == KernelConfigAttr::getSideKernelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FusedMatmulOp>(op) ||
        !op->hasAttr(KernelConfigAttr::getAttrName()))
      return op->emitError()
             << "expected '" << attr.getName().getValue()
             << "' as a unit attribute of a planned fusion.fused_matmul (one "
                "with a 'fusion.kernel'), but got "
             << attr.getValue() << " on '" << op->getName() << "'";
    return success();
  }
  if (attr.getName() == kPrepareFuncAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError() << "expected '" << kPrepareFuncAttrName
                             << "' to be a symbol reference (@<f>_prepare), "
                                "but got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() != TargetAttr::getModuleAttrName())
    return op->emitError() << "unknown fusion dialect attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "expected '" << TargetAttr::getModuleAttrName()
                           << "' on a builtin.module, but it is on '"
                           << op->getName() << "'";
  if (!isa<TargetAttr>(attr.getValue()))
    return op->emitError() << "expected '" << TargetAttr::getModuleAttrName()
                           << "' to be a #fusion.target attribute, but got "
                           << attr.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// TargetAttr
//===----------------------------------------------------------------------===//

StringRef TargetAttr::getKnownChips() { return "sm_90a, sm_100a"; }

LogicalResult
TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringRef chip) {
  if (chip == "sm_90a" || chip == "sm_100a")
    return success();
  return emitError() << "unknown target chip '" << chip
                     << "', expected one of: " << getKnownChips();
}

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  SMLoc loc = parser.getCurrentLocation();
  std::string chip;
  if (failed(parser.parseOptionalString(&chip))) {
    InFlightDiagnostic diag = parser.emitError(loc)
                              << "expected the chip as a quoted string such as "
                                 "#fusion.target<\"sm_90a\"> (known: "
                              << getKnownChips() << ")";
    StringRef keyword;
    if (succeeded(parser.parseOptionalKeyword(&keyword)))
      diag << ", but got " << keyword;
    return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    chip);
}

void TargetAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printString(getChip());
  printer << '>';
}

TargetAttr TargetAttr::lookup(Operation *op) {
  ModuleOp module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                      : op->getParentOfType<ModuleOp>();
  for (; module; module = module->getParentOfType<ModuleOp>())
    if (auto target = module->getAttrOfType<TargetAttr>(getModuleAttrName()))
      return target;
  return {};
}

//===----------------------------------------------------------------------===//
// KernelConfigAttr
//===----------------------------------------------------------------------===//

LogicalResult KernelConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t tileM, int64_t tileN,
    int64_t tileK, int64_t stages, int64_t clusterN, int64_t consumers,
    int64_t smemBytes, bool epilogueWarps, bool globalRows, bool stagedResidual,
    int64_t splitK, bool streamK, int64_t decodeSplits, int64_t clusterM) {
  for (auto [name, v] : {std::pair<StringRef, int64_t>{"tile_m", tileM},
                         {"tile_n", tileN},
                         {"tile_k", tileK},
                         {"stages", stages},
                         {"cluster_n", clusterN},
                         {"consumers", consumers}})
    if (v <= 0)
      return emitError() << "expected " << name << " > 0, but got " << v;
  if (smemBytes < 0)
    return emitError() << "expected smem_bytes >= 0, but got " << smemBytes;
  if (consumers > GemmTiling::kMaxConsumers)
    return emitError() << "expected consumers <= " << GemmTiling::kMaxConsumers
                       << " (a producer and the consumer warpgroups of "
                       << GemmTiling::kWarpgroupThreads << " threads within "
                       << GemmTiling::kMaxThreadsPerBlock
                       << " threads per CTA), but got " << consumers;
  if (globalRows && clusterN != 1)
    return emitError() << "expected cluster_n = 1 with global_rows (a row "
                          "exchanges its statistics through DSMEM or global "
                          "memory, not both), but got cluster_n = "
                       << clusterN;
  if (stagedResidual && !epilogueWarps)
    return emitError() << "expected epilogue_warps with staged_residual (the "
                          "epilogue warps load the residual), but got "
                          "epilogue_warps = false";
  // (epilogue_warps with cluster_n = 1 and no global rows: a grad
  // epilogue's rows one CTA holds; the generator refuses it for the forward
  // norms, which need the op's epilogue to tell.)
  if (splitK < 1)
    return emitError() << "expected split_k >= 1, but got " << splitK;
  if (splitK > 1 && (clusterN != 1 || epilogueWarps || globalRows))
    return emitError() << "expected split_k = 1 with a norm epilogue's "
                          "cluster_n, epilogue_warps or global_rows (a norm "
                          "needs whole rows of K), but got split_k = "
                       << splitK;
  if (streamK && (splitK != 1 || clusterN != 1 || epilogueWarps || globalRows))
    return emitError() << "expected stream_k without split_k, cluster_n, "
                          "epilogue_warps or global_rows (stream-K splits a "
                          "tile's K between two CTAs: plain tiles only), but "
                          "got split_k = "
                       << splitK << ", cluster_n = " << clusterN;
  if (decodeSplits < 1)
    return emitError() << "expected decode_splits >= 1, but got "
                       << decodeSplits;
  if (decodeSplits > 1 &&
      (splitK != 1 || streamK || clusterN != 1 || epilogueWarps || globalRows))
    return emitError() << "expected decode_splits without split_k, stream_k, "
                          "cluster_n, epilogue_warps or global_rows (plain "
                          "tiles whose K ranges one CTA finishes), but got "
                          "decode_splits = "
                       << decodeSplits << ", split_k = " << splitK
                       << ", cluster_n = " << clusterN;
  if (clusterM != 1 && clusterM != 2)
    return emitError() << "expected cluster_m = 1 or 2 (a pair of CTAs "
                          "sharing B's tiles by multicast), but got "
                       << clusterM;
  if (clusterM > 1 && (clusterN != 1 || splitK != 1 || streamK ||
                       decodeSplits != 1 || epilogueWarps || globalRows))
    return emitError() << "expected cluster_m without cluster_n, split_k, "
                          "stream_k, decode_splits, epilogue_warps or "
                          "global_rows (a pair of CTAs running the same "
                          "column blocks and K steps in step), but got "
                          "cluster_m = "
                       << clusterM << ", cluster_n = " << clusterN
                       << ", split_k = " << splitK;
  return success();
}
