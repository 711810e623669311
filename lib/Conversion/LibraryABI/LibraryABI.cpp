//===- LibraryABI.cpp - what a compiled library exports ------------------===//
//
// See LibraryABI.h: the symbols and descriptions shared by the GPU and CPU
// libraries.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/LibraryABI/LibraryABI.h"
#include "fusion/Conversion/LibraryABI/SizeTies.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::fusion;

/// Why a top-level symbol of this name would collide with what the lowered
/// library defines or calls, or "" when it would not.
StringRef mlir::fusion::reservedSymbolReason(StringRef name) {
  if (name.starts_with("__fusion_"))
    return "the compiler's own symbols start with '__fusion_' (kernel names, "
           "function descriptions)";
  if (name.starts_with("mgpu"))
    return "the GPU runtime's host entry points the lowered code calls start "
           "with 'mgpu'";
  if (name.starts_with("fusionrt"))
    return "the fusion runtime's entry points start with 'fusionrt'";
  if (name.starts_with("_mlir_"))
    return "MLIR's generated interfaces and runtime symbols start with "
           "'_mlir_'";
  if (name == "fusion_kernels" || name.starts_with("fusion_kernels_"))
    return "the kernels' gpu.module is 'fusion_kernels' and its binary, "
           "loader and kernel-name symbols start with 'fusion_kernels_'";
  if (name.starts_with("llvm."))
    return "'llvm.' names are LLVM intrinsics";
  if (name.starts_with("__"))
    return "names starting with '__' belong to the C implementation";
  // Libc names: the lowered host code calls some (allocation, copies), and
  // a library exporting one would shadow the C library for its callers.
  static const llvm::StringSet<> libc = {
      "main",    "malloc",  "calloc",  "realloc", "free",    "aligned_alloc",
      "posix_memalign", "memalign", "valloc", "memcpy", "memmove", "memset",
      "memcmp",  "memchr",  "strlen",  "strcmp",  "strncmp", "strcpy",
      "strncpy", "strcat",  "strchr",  "strdup",  "abort",   "exit",
      "_exit",   "atexit",  "printf",  "fprintf", "sprintf", "snprintf",
      "puts",    "putchar", "fputs",   "fwrite",  "fflush",  "write",
      "read",    "open",    "close",   "dlopen",  "dlsym",   "dlclose",
      "getenv",  "errno",   "raise",   "signal",  "qsort",   "bsearch",
      "sqrt",    "sqrtf",   "exp",     "expf",    "log",     "logf",
      "pow",     "powf",    "fabs",    "fabsf",   "tanh",    "tanhf",
      "erf",     "erff",    "_init",   "_fini",   "_start"};
  if (libc.contains(name))
    return "the C library defines it (the lowered host code calls C library "
           "functions, and an exported definition would shadow libc's)";
  return "";
}

bool mlir::fusion::isCIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// The description's name of an element type (the Python loader's dtypes),
/// or "" for a type it does not know.
static StringRef describeElementType(Type t) {
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isUnsignedInteger(8))
    return "u8";
  if (t.isSignlessInteger(1))
    return "i1";
  if (t.isSignlessInteger(8))
    return "i8";
  if (t.isSignlessInteger(16))
    return "i16";
  if (t.isSignlessInteger(32))
    return "i32";
  if (t.isSignlessInteger(64))
    return "i64";
  return "";
}

/// The function's description in the loader's signature syntax: its
/// arguments, then its results as the output arguments the caller passes,
/// e.g. "arg0: bf16[s0,1024]; arg1: bf16[1024,1024]; result0: bf16[s0,1024]".
/// A dynamic size the function's ops tie to another argument's or result's
/// is named (s0, s1, ... in order of appearance), so that the loader checks
/// they agree; one tied to a static size is written as that size; any other
/// is `?`. Fails on a type the loader cannot pass.
FailureOr<std::string>
mlir::fusion::describeFunction(func::FuncOp func, const LibraryKind &kind) {
  SmallVector<std::pair<Type, StringRef>> entries;
  for (Type t : func.getArgumentTypes())
    entries.push_back({t, "argument"});
  for (Type t : func.getResultTypes())
    entries.push_back({t, "result"});
  unsigned numArgs = func.getNumArguments();
  for (auto [i, entry] : llvm::enumerate(entries)) {
    auto [type, what] = entry;
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t || describeElementType(t.getElementType()).empty())
      return func.emitOpError()
             << "cannot be lowered to " << kind.loweredTo << ": " << what
             << " #" << (i < numArgs ? i : i - numArgs) << " has type " << type
             << ", but " << kind.entryPoint
             << " takes ranked tensors of bf16, f16, f32, f64, i1, i8, ui8, "
                "i16, i32 or i64";
  }

  // The value standing for each entry: an argument, or what the function
  // returns for a result.
  SmallVector<Value> values(func.getArguments());
  if (!func.getBody().empty())
    llvm::append_range(values,
                       func.getBody().front().getTerminator()->getOperands());
  std::optional<SizeTies> ties;
  if (!func.getBody().empty() && values.size() == entries.size())
    ties.emplace(func);
  // Tied dynamic sizes: how many entries' dimensions each class has, then
  // the names of those with more than one, in order of appearance.
  DenseMap<unsigned, unsigned> uses;
  DenseMap<unsigned, std::string> names;
  auto forEachDynamic = [&](auto fn) {
    for (auto [value, entry] : llvm::zip(values, entries))
      for (auto [d, size] :
           llvm::enumerate(cast<RankedTensorType>(entry.first).getShape()))
        if (ShapedType::isDynamic(size) && ties->consistent(value, d))
          fn(value, d);
  };
  if (ties) {
    forEachDynamic([&](Value v, int64_t d) { ++uses[ties->classOf(v, d)]; });
    forEachDynamic([&](Value v, int64_t d) {
      unsigned c = ties->classOf(v, d);
      if (uses[c] > 1 && !ties->staticSize(v, d) && !names.count(c))
        names[c] = ("s" + Twine(names.size())).str();
    });
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [i, entry] : llvm::enumerate(entries)) {
    auto t = cast<RankedTensorType>(entry.first);
    if (!text.empty())
      os << "; ";
    bool isArg = i < numArgs;
    os << (isArg ? "arg" : "result") << (isArg ? i : i - numArgs) << ": "
       << describeElementType(t.getElementType()) << "[";
    for (auto [d, size] : llvm::enumerate(t.getShape())) {
      if (d)
        os << ",";
      if (!ShapedType::isDynamic(size)) {
        os << size;
        continue;
      }
      Value v = ties ? values[i] : Value();
      if (!v || !ties->consistent(v, d)) {
        os << "?";
      } else if (std::optional<int64_t> fixed = ties->staticSize(v, d)) {
        os << *fixed;
      } else {
        auto it = names.find(ties->classOf(v, d));
        os << (it == names.end() ? StringRef("?") : StringRef(it->second));
      }
    }
    os << "]";
  }
  return text;
}

/// Exports the description of host function `name` as the constant
/// NUL-terminated string `__fusion_signature_<name>`.
void mlir::fusion::emitDescription(ModuleOp module, StringRef name,
                                  StringRef description) {
  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  std::string text = (description + Twine('\0')).str();
  auto type = LLVM::LLVMArrayType::get(top.getI8Type(), text.size());
  LLVM::GlobalOp::create(top, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External,
                         (kSignaturePrefix + name).str(),
                         top.getStringAttr(text));
}


LogicalResult mlir::fusion::checkLibrarySymbols(ModuleOp module,
                                                const LibraryKind &kind) {
  bool ok = true;
  for (Operation &op : module.getBody()->getOperations()) {
    auto name = op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!name)
      continue;
    StringRef why = reservedSymbolReason(name.getValue());
    if (!why.empty()) {
      op.emitOpError() << "has the reserved name '" << name.getValue()
                       << "': " << why;
      ok = false;
    } else if (isa<func::FuncOp>(op) && !isCIdentifier(name.getValue())) {
      op.emitOpError() << "has the name '" << name.getValue() << "', but "
                       << kind.entryPoint
                       << " is exported as a C symbol: expected letters, "
                          "digits and '_', not starting with a digit";
      ok = false;
    }
  }
  return success(ok);
}

LogicalResult mlir::fusion::checkReshapeIndices(Operation *root) {
  bool ok = true;
  auto check = [&](Operation *op, ArrayAttr reassociation, int64_t rank,
                   StringRef grouped) {
    for (Attribute group : reassociation)
      for (Attribute index : cast<ArrayAttr>(group)) {
        int64_t i = cast<IntegerAttr>(index).getValue().getSExtValue();
        if (i >= 0 && i < rank)
          continue;
        op->emitOpError() << "has the reassociation index " << i << ", but its "
                          << grouped << " has rank " << rank
                          << " (refused before lowering: libMLIR 22's verifier "
                             "compares these indices as 32-bit values, and its "
                             "bufferization crashes on this one)";
        ok = false;
        return;
      }
  };
  root->walk([&](Operation *op) {
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
      check(op, collapse.getReassociation(), collapse.getSrcType().getRank(),
            "source");
    else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
      check(op, expand.getReassociation(), expand.getResultType().getRank(),
            "result");
  });
  return success(ok);
}
