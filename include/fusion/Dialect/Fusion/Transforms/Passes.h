//===- Passes.h - fusion transform passes -----------------------*- C++ -*-===//

#ifndef FUSION_DIALECT_FUSION_TRANSFORMS_PASSES_H
#define FUSION_DIALECT_FUSION_TRANSFORMS_PASSES_H

#include "fusion/Dialect/Fusion/IR/FusionDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fusion {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "fusion/Dialect/Fusion/Transforms/Passes.h.inc"

} // namespace mlir::fusion

#endif // FUSION_DIALECT_FUSION_TRANSFORMS_PASSES_H
