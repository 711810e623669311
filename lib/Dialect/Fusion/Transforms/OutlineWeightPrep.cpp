//===- OutlineWeightPrep.cpp - compute weight-only values once per version ===//
//
// What a function computes from its weights alone (Lazy Pre-Norm's fold
// diag(g) W, a LayerNorm bias's beta W) does not change from call to call
// while the weights do not. This moves it into a function of its own,
// `@f_prepare(weights) -> prepared`, and gives `@f` the prepared values as
// arguments appended after its own: a caller that knows when its weights
// change (the Python front end, by the tensors' version counters) runs
// `@f_prepare` once per weight version instead of once per call.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// A view of a tensor: free, so not worth a copy of its own.
bool isView(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
      op);
}

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

/// The ops of `body` that compute from weights (and constants) only, in
/// order, and among them those that do work (not only views of weights).
struct WeightOnlyOps {
  SmallVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 8> working;
};

WeightOnlyOps findWeightOnlyOps(Block &body,
                                const llvm::SmallPtrSetImpl<Value> &weights) {
  WeightOnlyOps found;
  llvm::SmallPtrSet<Value, 16> derived(weights.begin(), weights.end());
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0 || op.getNumResults() == 0 ||
        !isMemoryEffectFree(&op) ||
        !llvm::all_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
      continue;
    bool fromWeights = false, onlyWeights = true;
    for (Value v : op.getOperands()) {
      if (derived.contains(v))
        fromWeights = true;
      else if (!isConstant(v))
        onlyWeights = false;
    }
    if (!fromWeights || !onlyWeights)
      continue;
    found.ops.push_back(&op);
    derived.insert(op.result_begin(), op.result_end());
    bool works = !isView(&op) || llvm::any_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && found.working.contains(def);
    });
    if (works)
      found.working.insert(&op);
  }
  return found;
}

void outline(func::FuncOp f, SymbolTable &symbols, bool report) {
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return;
  Block &body = f.getBody().front();
  llvm::SmallPtrSet<Value, 8> weightSet;
  SmallVector<BlockArgument> weights;
  for (BlockArgument a : body.getArguments())
    if (f.getArgAttr(a.getArgNumber(), FusionDialect::kWeightArgAttrName)) {
      weights.push_back(a);
      weightSet.insert(a);
    }
  if (weights.empty())
    return;
  WeightOnlyOps found = findWeightOnlyOps(body, weightSet);

  // The prepared values: results of working ops that something else reads.
  SmallVector<Value> prepared;
  for (Operation *op : found.ops) {
    if (!found.working.contains(op))
      continue;
    for (Value r : op->getResults()) {
      bool readOutside = llvm::any_of(r.getUsers(), [&](Operation *user) {
        return !found.working.contains(user);
      });
      if (!readOutside)
        continue;
      if (llvm::any_of(r.getUsers(), llvm::IsaPred<func::ReturnOp>)) {
        fusion::remark(
            report, f,
            "weight preparation not outlined: a value computed from the "
            "weights alone is returned");
        return;
      }
      prepared.push_back(r);
    }
  }
  if (prepared.empty())
    return;
  std::string name = (f.getName() + "_prepare").str();
  if (symbols.lookup(name)) {
    fusion::remark(report, f,
                   "weight preparation not outlined: @" + name +
                       " already exists");
    return;
  }

  // @f_prepare(weights) -> prepared: the weight-only ops, cloned in order,
  // with the constants they read.
  OpBuilder b(f);
  SmallVector<Type> weightTypes, preparedTypes;
  for (BlockArgument a : weights)
    weightTypes.push_back(a.getType());
  for (Value v : prepared)
    preparedTypes.push_back(v.getType());
  auto prepare = func::FuncOp::create(
      b, f.getLoc(), name, b.getFunctionType(weightTypes, preparedTypes));
  Block *entry = prepare.addEntryBlock();
  IRMapping map;
  for (auto [from, to] : llvm::zip(weights, entry->getArguments()))
    map.map(from, to);
  b.setInsertionPointToStart(entry);
  for (Operation *op : found.ops) {
    for (Value v : op->getOperands())
      if (!map.contains(v))
        b.clone(*v.getDefiningOp(), map); // a constant
    b.clone(*op, map);
  }
  SmallVector<Value> results;
  for (Value v : prepared)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(b, f.getLoc(), results);
  symbols.insert(prepare, Block::iterator(f));

  // @f reads the prepared values from arguments after its own.
  unsigned first = f.getNumArguments();
  for (auto [i, v] : llvm::enumerate(prepared)) {
    NamedAttribute index(b.getStringAttr(FusionDialect::kPreparedArgAttrName),
                         b.getI64IntegerAttr(i));
    if (failed(f.insertArgument(first + i, v.getType(),
                                b.getDictionaryAttr(index), v.getLoc())))
      return;
    v.replaceAllUsesWith(body.getArgument(first + i));
  }
  for (Operation *op : llvm::reverse(found.ops))
    if (op->use_empty())
      op->erase();
  f->setAttr(FusionDialect::kPrepareFuncAttrName,
             FlatSymbolRefAttr::get(prepare));
  fusion::remark(
      report, f,
      "weight preparation outlined into @" + name + ": " +
          Twine(prepared.size()) +
          " value(s) computed from the weights alone (by its caller when "
          "the weights change, not per call), passed to this "
          "function after its arguments");
}
} // namespace

void mlir::fusion::applyOutlineWeightPrep(ModuleOp module, bool report) {
  SymbolTable symbols(module);
  for (func::FuncOp f : llvm::to_vector(module.getOps<func::FuncOp>()))
    outline(f, symbols, report);
}
