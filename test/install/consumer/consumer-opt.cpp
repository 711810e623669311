//===- consumer-opt.cpp - an opt tool built on the installed package ------===//
//
// Another project's tool: upstream's func, arith and tensor dialects plus
// the fusion dialect and passes, registered through include/fusion/InitAll.h.
//
//===----------------------------------------------------------------------===//

#include "fusion/InitAll.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  mlir::fusion::registerFusionDialects(registry);
  mlir::fusion::registerFusionPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "consumer-opt\n", registry));
}
