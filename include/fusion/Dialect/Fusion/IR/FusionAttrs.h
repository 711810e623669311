//===- FusionAttrs.h - fusion attributes ------------------------*- C++ -*-===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONATTRS_H
#define FUSION_DIALECT_FUSION_IR_FUSIONATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "fusion/Dialect/Fusion/IR/FusionEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fusion/Dialect/Fusion/IR/FusionAttrs.h.inc"

#endif // FUSION_DIALECT_FUSION_IR_FUSIONATTRS_H
