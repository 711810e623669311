//===- FusionDialect.h - fusion dialect -------------------------*- C++ -*-===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONDIALECT_H
#define FUSION_DIALECT_FUSION_IR_FUSIONDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "fusion/Dialect/Fusion/IR/FusionDialect.h.inc"

#endif // FUSION_DIALECT_FUSION_IR_FUSIONDIALECT_H
