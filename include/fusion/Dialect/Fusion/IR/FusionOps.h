//===- FusionOps.h - fusion ops ---------------------------------*- C++ -*-===//

#ifndef FUSION_DIALECT_FUSION_IR_FUSIONOPS_H
#define FUSION_DIALECT_FUSION_IR_FUSIONOPS_H

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "fusion/Dialect/Fusion/IR/FusionDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fusion {
/// Checks that every static ranked tensor operand and result of `op` has an
/// element count and a byte size that fit in int64; emits an error naming
/// the first that does not.
LogicalResult verifyTensorSizes(Operation *op);

namespace OpTrait {
/// The Fusion_SizedTensors trait of every fusion op (FusionBase.td).
template <typename ConcreteType>
class SizedTensors
    : public ::mlir::OpTrait::TraitBase<ConcreteType, SizedTensors> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyTensorSizes(op);
  }
};
} // namespace OpTrait
} // namespace mlir::fusion

#define GET_OP_CLASSES
#include "fusion/Dialect/Fusion/IR/FusionOps.h.inc"

#endif // FUSION_DIALECT_FUSION_IR_FUSIONOPS_H
