//===- Runner.cpp - compile a func.func on tensors and run it on the CPU --===//
//
// See Runner.h for the three steps: entry wrapper, lowering, execution.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "fusion/Conversion/LibraryABI/LibraryABI.h"
#include "fusion/Dialect/Fusion/IR/FusionDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <limits>

using namespace mlir;
using namespace mlir::fusion_runner;

// Order matters:
// - symbol-dce drops the functions that are neither an entry nor reachable
//   from one (lowerToLLVM makes them private first);
// - the fusion ops become linalg/tensor/arith/math/scf on tensors;
// - arith on tensors (the wrapper's truncf/extf, and user code) becomes
//   linalg.generic, so everything bufferizes in one go;
// - every buffer the program allocates is freed (ownership-based
//   deallocation; the clones it inserts become memref copies): a run leaks
//   nothing, which the AddressSanitizer build's leak checker verifies;
// - after the loops are explicit, bf16/f16 arithmetic and math are computed
//   in f32 and rounded back after each op (exact for +-*/ and sqrt, since f32
//   has more than twice the precision of either), and bf16 <-> f32
//   conversions are expanded to integer code: no soft-float helpers needed;
// - math ops without an LLVM intrinsic (erf, ...) become libm calls.
const char *const mlir::fusion_runner::kLoweringPipeline =
    "builtin.module("
    "symbol-dce,"
    "convert-fusion-to-linalg,"
    "func.func(convert-elementwise-to-linalg),"
    "one-shot-bufferize{bufferize-function-boundaries},"
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,"
    "convert-linalg-to-loops,"
    "math-extend-to-supported-types,"
    "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},"
    "arith-expand{include-bf16=true},"
    "expand-strided-metadata,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "finalize-memref-to-llvm,"
    "convert-to-llvm,"
    "reconcile-unrealized-casts)";

static constexpr llvm::StringLiteral kWrapperPrefix = "__fusion_runner_";

std::string mlir::fusion_runner::wrapperName(StringRef funcName) {
  return (kWrapperPrefix + funcName).str();
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

//===----------------------------------------------------------------------===//
// Entry checks
//===----------------------------------------------------------------------===//

/// Element types the host can generate inputs for.
static bool isSupportedArgElementType(Type type) {
  return type.isBF16() || type.isF16() || type.isF32();
}

/// Element types a result can have: they are converted to f32 on the way
/// out (f64 is rounded, integers are converted exactly up to 2^24).
static bool isSupportedResultElementType(Type type) {
  if (type.isBF16() || type.isF16() || type.isF32() || type.isF64())
    return true;
  auto intType = dyn_cast<IntegerType>(type);
  return intType && intType.isSignless();
}

static llvm::Error checkStaticTensor(Type type, StringRef what,
                                    StringRef kind, unsigned index) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return makeError(llvm::formatv(
        "{0} {1} of {2} has type {3}, but fusion-runner only supports ranked "
        "tensors",
        kind, index, what, typeToString(type)));
  if (!tensorType.hasStaticShape())
    return makeError(llvm::formatv(
        "{0} {1} of {2} has dynamic shape {3}; fusion-runner needs static "
        "shapes: write a wrapper function with static shapes that calls it",
        kind, index, what, typeToString(type)));
  return llvm::Error::success();
}

llvm::Expected<func::FuncOp>
mlir::fusion_runner::lookupEntry(ModuleOp module, StringRef funcName,
                                 StringRef what) {
  Operation *symbol = SymbolTable::lookupSymbolIn(module, funcName);
  if (!symbol) {
    std::string available;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || f.getSymName().starts_with(kWrapperPrefix))
        continue;
      available += (available.empty() ? "@" : ", @") + f.getSymName().str();
    }
    return makeError(llvm::formatv(
        "no function {0}; the module defines {1}", what,
        available.empty() ? std::string("no function with a body")
                          : available));
  }
  auto func = dyn_cast<func::FuncOp>(symbol);
  if (!func)
    return makeError(llvm::formatv("{0} is a '{1}' op, but a func.func is "
                                   "expected",
                                   what, symbol->getName().getStringRef()));
  if (func.isExternal())
    return makeError(llvm::formatv("{0} is a declaration without a body", what));

  FunctionType type = func.getFunctionType();
  for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
    if (llvm::Error err = checkStaticTensor(argType, what, "argument", i))
      return std::move(err);
    Type element = cast<RankedTensorType>(argType).getElementType();
    if (isa<IntegerType, IndexType>(element))
      return makeError(llvm::formatv(
          "argument {0} of {1} has integer type {2}; fusion-runner only "
          "generates bf16/f16/f32 inputs: make integer operands constants "
          "inside the function (arith.constant dense<...>)",
          i, what, typeToString(argType)));
    if (!isSupportedArgElementType(element))
      return makeError(llvm::formatv(
          "argument {0} of {1} has type {2}; fusion-runner generates inputs "
          "of element type bf16, f16 or f32 only",
          i, what, typeToString(argType)));
  }
  for (auto [i, resultType] : llvm::enumerate(type.getResults())) {
    if (llvm::Error err = checkStaticTensor(resultType, what, "result", i))
      return std::move(err);
    if (!isSupportedResultElementType(
            cast<RankedTensorType>(resultType).getElementType()))
      return makeError(llvm::formatv(
          "result {0} of {1} has type {2}; fusion-runner reads back float "
          "(bf16/f16/f32/f64) and signless integer tensors only",
          i, what, typeToString(resultType)));
  }
  return func;
}

llvm::Error mlir::fusion_runner::checkSameSignature(func::FuncOp a,
                                                    StringRef aWhat,
                                                    func::FuncOp b,
                                                    StringRef bWhat) {
  FunctionType aType = a.getFunctionType(), bType = b.getFunctionType();
  auto compareList = [&](TypeRange aList, TypeRange bList,
                         StringRef kind) -> llvm::Error {
    if (aList.size() != bList.size())
      return makeError(llvm::formatv(
          "signature mismatch: {0} has {1} {2}s, but {3} has {4}", aWhat,
          aList.size(), kind, bWhat, bList.size()));
    for (auto [i, types] : llvm::enumerate(llvm::zip(aList, bList))) {
      auto [aT, bT] = types;
      if (aT != bT)
        return makeError(llvm::formatv(
            "signature mismatch: {0} {1} of {2} is {3}, but {0} {1} of {4} "
            "is {5}",
            kind, i, aWhat, typeToString(aT), bWhat, typeToString(bT)));
    }
    return llvm::Error::success();
  };
  if (llvm::Error err =
          compareList(aType.getInputs(), bType.getInputs(), "argument"))
    return err;
  return compareList(aType.getResults(), bType.getResults(), "result");
}

//===----------------------------------------------------------------------===//
// Weight preparation
//===----------------------------------------------------------------------===//

std::string mlir::fusion_runner::joinWeightPreparation(func::FuncOp f) {
  auto prepareRef = f->getAttrOfType<FlatSymbolRefAttr>(
      fusion::FusionDialect::kPrepareFuncAttrName);
  if (!prepareRef)
    return f.getSymName().str();
  auto module = f->getParentOfType<ModuleOp>();
  auto prepare = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      f, prepareRef);
  std::string name = (f.getSymName() + "_with_prepare").str();
  if (!prepare || SymbolTable::lookupSymbolIn(module, name))
    return f.getSymName().str();

  // The original arguments: those before the first prepared one.
  unsigned original = f.getNumArguments();
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (f.getArgAttr(i, fusion::FusionDialect::kPreparedArgAttrName)) {
      original = i;
      break;
    }
  FunctionType type = f.getFunctionType();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = f.getLoc();
  auto joined = func::FuncOp::create(
      b, loc, name,
      b.getFunctionType(type.getInputs().take_front(original),
                        type.getResults()));
  Block *body = joined.addEntryBlock();
  b.setInsertionPointToStart(body);
  SmallVector<Value> weights;
  for (unsigned i = 0; i < original; ++i)
    if (f.getArgAttr(i, fusion::FusionDialect::kWeightArgAttrName))
      weights.push_back(body->getArgument(i));
  auto prepared = func::CallOp::create(b, loc, prepare, weights);
  SmallVector<Value> args(body->getArguments());
  llvm::append_range(args, prepared.getResults());
  auto call = func::CallOp::create(b, loc, f, args);
  func::ReturnOp::create(b, loc, call.getResults());
  return name;
}

//===----------------------------------------------------------------------===//
// Entry wrapper
//===----------------------------------------------------------------------===//

/// Converts `value` (a tensor of f32) to a tensor of `type`'s element type.
static Value castFromF32(OpBuilder &b, Location loc, Value value,
                         RankedTensorType type) {
  if (type.getElementType().isF32())
    return value;
  return arith::TruncFOp::create(b, loc, type, value);
}

/// Converts `value` (a tensor of a supported result type) to a tensor of f32.
static Value castToF32(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  auto f32Type = type.clone(b.getF32Type());
  if (element.isF32())
    return value;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    if (floatType.getWidth() < 32)
      return arith::ExtFOp::create(b, loc, f32Type, value);
    return arith::TruncFOp::create(b, loc, f32Type, value);
  }
  if (element.isInteger(1))
    return arith::UIToFPOp::create(b, loc, f32Type, value);
  return arith::SIToFPOp::create(b, loc, f32Type, value);
}

void mlir::fusion_runner::addEntryWrapper(func::FuncOp entry) {
  auto module = entry->getParentOfType<ModuleOp>();
  std::string name = wrapperName(entry.getSymName());
  if (SymbolTable::lookupSymbolIn(module, name))
    return;

  MLIRContext *ctx = entry.getContext();
  ctx->loadDialect<arith::ArithDialect, bufferization::BufferizationDialect,
                   func::FuncDialect>();
  Location loc = NameLoc::get(StringAttr::get(ctx, name), entry.getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type f32 = b.getF32Type();
  FunctionType entryType = entry.getFunctionType();

  // func.func @__fusion_runner_f(%in0: memref<..xf32>, ..., %out0: ...)
  SmallVector<Type> wrapperArgs;
  for (Type type : llvm::concat<const Type>(entryType.getInputs(),
                                            entryType.getResults()))
    wrapperArgs.push_back(
        MemRefType::get(cast<RankedTensorType>(type).getShape(), f32));
  auto wrapper = func::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, wrapperArgs, {}));
  wrapper->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *body = wrapper.addEntryBlock();
  b.setInsertionPointToStart(body);

  // Inputs: f32 buffer -> tensor -> argument element type.
  SmallVector<Value> callArgs;
  for (auto [i, type] : llvm::enumerate(entryType.getInputs())) {
    auto tensorType = cast<RankedTensorType>(type);
    Value input = bufferization::ToTensorOp::create(
        b, loc, tensorType.clone(f32), body->getArgument(i),
        /*restrict=*/true, /*writable=*/false);
    callArgs.push_back(castFromF32(b, loc, input, tensorType));
  }

  auto call = func::CallOp::create(b, loc, entry, callArgs);

  // Results: widen to f32 and copy into the output buffers.
  unsigned numInputs = entryType.getNumInputs();
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    Value widened = castToF32(b, loc, result);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, widened, body->getArgument(numInputs + i),
        /*restrict=*/true, /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

LogicalResult mlir::fusion_runner::parseModulePipeline(StringRef text,
                                                       PassManager &pm,
                                                       std::string &error) {
  llvm::raw_string_ostream errorStream(error);
  FailureOr<OpPassManager> parsed = parsePassPipeline(text, errorStream);
  if (failed(parsed))
    return failure();
  if (parsed->getOpAnchorName() != ModuleOp::getOperationName()) {
    errorStream << "expected a pipeline on 'builtin.module', but got one on '"
                << parsed->getOpAnchorName() << "'";
    return failure();
  }
  static_cast<OpPassManager &>(pm) = *parsed;
  return success();
}

LogicalResult mlir::fusion_runner::lowerToLLVM(ModuleOp module,
                                               ArrayRef<std::string> entries) {
  llvm::StringSet<> wrappers;
  for (const std::string &entry : entries)
    wrappers.insert(wrapperName(entry));
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && !wrappers.contains(func.getSymName()))
      func.setPrivate();

  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string errorMessage;
  // What libMLIR's bufferization would crash on (LibraryABI.h).
  if (failed(fusion::checkReshapeIndices(module)))
    return failure();
  if (failed(parseModulePipeline(kLoweringPipeline, pm, errorMessage))) {
    // Only reachable if a pass is missing from the registry.
    module.emitError() << "cannot build the lowering pipeline: "
                       << errorMessage;
    return failure();
  }
  if (failed(pm.run(module))) {
    module.emitError() << "lowering to the LLVM dialect failed (pipeline: "
                       << kLoweringPipeline << ")";
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Execution
//===----------------------------------------------------------------------===//

Executable::Executable(std::unique_ptr<ExecutionEngine> engine)
    : engine(std::move(engine)) {}
Executable::Executable(Executable &&) = default;
Executable &Executable::operator=(Executable &&) = default;
Executable::~Executable() = default;

llvm::Expected<Executable>
Executable::create(ModuleOp llvmModule, unsigned optLevel,
                   ArrayRef<std::string> sharedLibs) {
  SmallVector<StringRef> libs(sharedLibs.begin(), sharedLibs.end());
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               /*targetMachine=*/nullptr);
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(optLevel);
  options.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(llvmModule, options);
  if (!engine)
    return engine.takeError();
  return Executable(std::move(*engine));
}

namespace {
/// The memref descriptor of a ranked memref, as the C interface passes it:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}, all 8 bytes.
struct Descriptor {
  Descriptor(float *data, ArrayRef<int64_t> shape) {
    static_assert(sizeof(float *) == sizeof(int64_t), "64-bit host expected");
    words.push_back(reinterpret_cast<int64_t>(data));
    words.push_back(reinterpret_cast<int64_t>(data));
    words.push_back(0);
    llvm::append_range(words, shape);
    SmallVector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    llvm::append_range(words, strides);
  }
  SmallVector<int64_t> words;
};
} // namespace

llvm::Error Executable::run(StringRef funcName, ArrayRef<HostTensor> inputs,
                            TypeRange resultTypes,
                            std::vector<HostTensor> &results) {
  // The program may not write its inputs, but a private copy makes sure the
  // caller's buffers stay the same for the next program.
  std::vector<std::vector<float>> inputCopies;
  for (const HostTensor &input : inputs)
    inputCopies.push_back(input.data);

  results.clear();
  for (Type type : resultTypes) {
    auto tensorType = cast<RankedTensorType>(type);
    results.push_back(
        {tensorType,
         std::vector<float>(tensorType.getNumElements(),
                            std::numeric_limits<float>::quiet_NaN())});
  }

  std::vector<Descriptor> descriptors;
  for (auto [input, data] : llvm::zip(inputs, inputCopies))
    descriptors.emplace_back(data.data(), input.type.getShape());
  for (HostTensor &result : results)
    descriptors.emplace_back(result.data.data(), result.type.getShape());

  // invokePacked takes one pointer per argument of the C interface function,
  // and each of those arguments is a pointer to a descriptor.
  SmallVector<void *> descriptorPtrs, args;
  for (Descriptor &descriptor : descriptors)
    descriptorPtrs.push_back(descriptor.words.data());
  for (void *&ptr : descriptorPtrs)
    args.push_back(&ptr);
  return engine->invokePacked("_mlir_ciface_" + wrapperName(funcName), args);
}
