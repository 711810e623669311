//===- FusionDialect.cpp - fusion dialect and attributes ------------------===//

#include "fusion/Dialect/Fusion/IR/FusionDialect.h"
#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fusion;

#include "fusion/Dialect/Fusion/IR/FusionDialect.cpp.inc"
#include "fusion/Dialect/Fusion/IR/FusionEnums.cpp.inc"

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

/// `fusion.target` may only sit on a module, and must hold a target.
LogicalResult FusionDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == KernelConfigAttr::getAttrName()) {
    if (!isa<KernelConfigAttr>(attr.getValue()))
      return op->emitError() << "expected '" << KernelConfigAttr::getAttrName()
                             << "' to be a #fusion.kernel_config attribute, "
                                "but got "
                             << attr.getValue();
    if (!isa<FusedMatmulOp>(op))
      return op->emitError() << "expected '" << KernelConfigAttr::getAttrName()
                             << "' on a fusion.fused_matmul, but it is on '"
                             << op->getName() << "'";
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

LogicalResult
KernelConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t tileM, int64_t tileN, int64_t tileK,
                         int64_t stages, int64_t clusterN, int64_t consumers,
                         int64_t smemBytes) {
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
  return success();
}
