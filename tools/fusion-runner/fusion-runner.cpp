//===- fusion-runner.cpp - run fusion/linalg functions on the CPU ---------===//
//
// fusion-runner executes a func.func on tensors on the CPU, through the
// reference lowering (convert-fusion-to-linalg) and MLIR's ExecutionEngine.
// It is the tool behind the semantic tests: "run the program before and after
// a rewrite, on the same inputs, and compare".
//
// Usage:
//
//   fusion-runner in.mlir -e f                      run @f, print its results
//   fusion-runner in.mlir -e f --compare=g          run @f and @g, compare
//   fusion-runner in.mlir -e f --against=o.mlir     @f here vs @f in o.mlir
//   fusion-runner in.mlir -e f --after-passes=P     @f vs @f after pipeline P
//
// Inputs. Every argument of @f must be a statically shaped tensor of bf16,
// f16 or f32. fusion-runner fills it with deterministic pseudo-random values
// (SplitMix64, --seed) uniform in [lo, hi) (--input-range, default [-1, 1)),
// plus --input-offset. Values are drawn in f32 and rounded to the argument's
// element type inside the program, identically for both sides of a
// comparison. Integer arguments are rejected: make them constants.
//
// Output of a plain run, per result (values when --print is given or the
// result has at most 64 elements; %g format, 6 significant digits):
//
//   result 0: tensor<2x3xf32> = [[1, 2, 3], [4, 5, 6]]
//     min=1 max=6 mean=3.5
//
// Output of a comparison (@f is the reference b, the other side is a):
//
//   result 0: max_abs_err=0 max_rel_err=0 mismatches=0/6 (atol=1e-05, rtol=1e-05)
//   PASS
//
// An element pair matches when |a - b| <= atol + rtol * |b| (like
// numpy.allclose), when both are NaN, or when both are the same infinity.
// The exit code is 0 on PASS and 1 on FAIL or on any error.
//
// How it runs: a wrapper `__fusion_runner_<f>` taking f32 memrefs is added
// to the module (see Runner.h), the module is lowered with
// fusion_runner::kLoweringPipeline, JIT-compiled, and the wrapper is called
// with host buffers. --dump-lowered prints the lowered module instead.
//
//===----------------------------------------------------------------------===//

#include "Report.h"
#include "Runner.h"

#include "fusion/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "fusion/Tools/UpstreamParserGuard.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fusion_runner;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::OptionCategory runnerCategory("fusion-runner options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<input.mlir>"),
                                          cl::cat(runnerCategory));

static cl::opt<std::string>
    entryName("e", cl::desc("Function to run (required)"),
              cl::value_desc("function"), cl::cat(runnerCategory));
static cl::alias entryNameAlias("entry-point", cl::desc("Alias for -e"),
                                cl::aliasopt(entryName),
                                cl::cat(runnerCategory));

static cl::opt<std::string> compareName(
    "compare",
    cl::desc("Also run this function on the same inputs and compare its "
             "results with those of -e (the reference); with --against or "
             "--after-passes, names the function on the other side"),
    cl::value_desc("function"), cl::cat(runnerCategory));

static cl::opt<std::string> againstFilename(
    "against",
    cl::desc("Compare -e in the input with the function of the same name (or "
             "--compare) in this file"),
    cl::value_desc("other.mlir"), cl::cat(runnerCategory));

static cl::opt<std::string> afterPasses(
    "after-passes",
    cl::desc("Compare -e before and after this pass pipeline, e.g. "
             "'canonicalize,cse' or 'builtin.module(func.func(cse))'; a "
             "pipeline not starting with builtin.module( is wrapped in one"),
    cl::value_desc("pipeline"), cl::cat(runnerCategory));

static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the input generator (default 0)"),
                              cl::init(0), cl::cat(runnerCategory));

static cl::opt<std::string> inputRange(
    "input-range",
    cl::desc("Inputs are uniform in [lo, hi) (default -1,1)"),
    cl::value_desc("lo,hi"), cl::init("-1,1"), cl::cat(runnerCategory));

static cl::opt<std::string> inputOffset(
    "input-offset",
    cl::desc("Constant added to every input value, e.g. to give LayerNorm "
             "inputs a large mean (default 0)"),
    cl::value_desc("c"), cl::init("0"), cl::cat(runnerCategory));

static cl::opt<bool> printAll(
    "print",
    cl::desc("Print every value of every result (by default only results "
             "with at most 64 elements are printed in full)"),
    cl::cat(runnerCategory));

static cl::opt<bool> printInputs("print-inputs",
                                 cl::desc("Print the generated inputs"),
                                 cl::cat(runnerCategory));

static cl::opt<std::string>
    atolOption("atol", cl::desc("Absolute tolerance (default 1e-5)"),
               cl::value_desc("x"), cl::init("1e-5"), cl::cat(runnerCategory));
static cl::opt<std::string>
    rtolOption("rtol", cl::desc("Relative tolerance (default 1e-5)"),
               cl::value_desc("x"), cl::init("1e-5"), cl::cat(runnerCategory));

static cl::opt<bool> dumpLowered(
    "dump-lowered",
    cl::desc("Print the module(s) lowered to the LLVM dialect and exit"),
    cl::cat(runnerCategory));

static cl::list<std::string> sharedLibs(
    "shared-libs",
    cl::desc("Libraries to load for symbol resolution (comma separated), "
             "e.g. libmlir_runner_utils.so for printMemrefF32"),
    cl::CommaSeparated, cl::value_desc("lib.so"), cl::cat(runnerCategory));

static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM optimization level, 0-3 "
                                           "(default 2)"),
                                  cl::init(2), cl::cat(runnerCategory));

static const char *const kOverview = R"(fusion-runner: run fusion/linalg functions on the CPU and compare them

  fusion-runner in.mlir -e f                    run @f on random inputs, print its results
  fusion-runner in.mlir -e f --compare=g        run @f and @g on the same inputs, compare
  fusion-runner in.mlir -e f --against=o.mlir   compare @f with @f (or --compare) in o.mlir
  fusion-runner in.mlir -e f --after-passes=P   compare @f before and after the pipeline P

Arguments of the function must be static tensors of bf16, f16 or f32; they get
deterministic pseudo-random values, uniform in [lo, hi) + offset, drawn in f32
and rounded to the element type (so a bound may be reached by rounding). Results
are printed as

  result 0: tensor<2x3xf32> = [[1, 2, 3], [4, 5, 6]]
    min=1 max=6 mean=3.5

(values when --print is given or the result has at most 64 elements, %g with
6 significant digits). A comparison prints per result

  result 0: max_abs_err=.. max_rel_err=.. mismatches=0/4096 (atol=1e-05, rtol=1e-05)

and then PASS or FAIL. Elements match when |a - b| <= atol + rtol * |b|, where
b is the reference (-e), or when both are NaN. Exit code: 0 on success and
PASS, 1 on FAIL or error.

The module is lowered with convert-fusion-to-linalg and upstream passes
(--dump-lowered shows the result) and JIT-compiled with MLIR's ExecutionEngine.
)";

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static int reportError(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << '\n';
  return 1;
}

static int reportError(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  return reportError(message);
}

/// Parses a finite floating-point number; the whole string must be used.
static std::optional<double> parseDouble(StringRef text) {
  std::string s = text.trim().str();
  if (s.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value))
    return std::nullopt;
  return value;
}

/// A module parsed from a file, with the name used in messages.
struct InputModule {
  OwningOpRef<ModuleOp> module;
  std::string filename;
};

static FailureOr<InputModule>
parseInputFile(StringRef filename, MLIRContext &context,
               std::vector<std::unique_ptr<llvm::SourceMgr>> &sourceMgrs) {
  std::string errorMessage;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(filename);
  if (!buffer) {
    reportError("cannot open input file '" + filename +
                "': " + buffer.getError().message());
    return failure();
  }
  if (auto hazard = fusion::findUpstreamParserHazard((*buffer)->getBuffer())) {
    // What libMLIR's parser would crash on (fusion/Tools/UpstreamParserGuard.h).
    llvm::SourceMgr sourceMgr;
    const char *at = (*buffer)->getBufferStart() + hazard->offset;
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(at),
                           llvm::SourceMgr::DK_Error, hazard->message);
    return failure();
  }
  sourceMgrs.push_back(std::make_unique<llvm::SourceMgr>());
  sourceMgrs.back()->AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  InputModule input;
  input.filename = filename.str();
  input.module = parseSourceFile<ModuleOp>(*sourceMgrs.back(),
                                           ParserConfig(&context));
  if (!input.module) {
    reportError("cannot parse '" + filename + "'");
    return failure();
  }
  return input;
}

/// One side of a run or a comparison: a function in a module.
struct Program {
  ModuleOp module;
  std::string funcName;
  /// How messages name it: "@f", "@f in other.mlir", "@f after passes".
  std::string what;
  FunctionType type;
};

/// Lowers each distinct module of `programs` once (with the wrappers of all
/// programs in it) and JIT-compiles it. `executables[i]` runs `programs[i]`.
static LogicalResult
compilePrograms(ArrayRef<Program> programs,
                std::vector<std::shared_ptr<Executable>> &executables,
                ArrayRef<std::string> libs) {
  SmallVector<ModuleOp> modules;
  for (const Program &program : programs)
    if (!llvm::is_contained(modules, program.module))
      modules.push_back(program.module);

  for (ModuleOp module : modules) {
    SmallVector<std::string> entries;
    for (const Program &program : programs)
      if (program.module == module)
        entries.push_back(program.funcName);
    if (failed(lowerToLLVM(module, entries)))
      return failure();
  }

  if (dumpLowered) {
    for (ModuleOp module : modules) {
      if (modules.size() > 1) {
        llvm::outs() << "// ----- lowered module of";
        for (const Program &program : programs)
          if (program.module == module)
            llvm::outs() << ' ' << program.what;
        llvm::outs() << '\n';
      }
      module.print(llvm::outs());
      llvm::outs() << '\n';
    }
    return success();
  }

  std::vector<std::shared_ptr<Executable>> perModule;
  for (ModuleOp module : modules) {
    auto executable = Executable::create(module, optLevel, libs);
    if (!executable) {
      reportError("cannot JIT-compile the lowered module: " +
                  llvm::toString(executable.takeError()));
      return failure();
    }
    perModule.push_back(std::make_shared<Executable>(std::move(*executable)));
  }
  for (const Program &program : programs)
    executables.push_back(
        perModule[llvm::find(modules, program.module) - modules.begin()]);
  return success();
}

/// The libraries the JIT loads: libmlir_c_runner_utils.so when it is
/// installed (it provides memrefCopy for non-contiguous copies), then the
/// user's --shared-libs.
static std::vector<std::string> collectSharedLibs() {
  std::vector<std::string> libs;
  std::string cRunnerUtils =
      std::string(FUSION_RUNNER_MLIR_LIB_DIR) + "/libmlir_c_runner_utils.so";
  if (llvm::sys::fs::exists(cRunnerUtils))
    libs.push_back(cRunnerUtils);
  for (const std::string &lib : sharedLibs)
    libs.push_back(lib);
  return libs;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

/// The command line's numbers, checked.
struct RunOptions {
  InputOptions inputs;
  double atol = 0, rtol = 0;
  /// Whether a second program is compared with -e.
  bool comparing = false;
};

/// Checks the command line and parses its numbers into `options`. Returns 0,
/// or the exit code after reporting the first problem.
static int checkOptions(RunOptions &options) {
  if (inputFilename.empty())
    return reportError("no input file; usage: fusion-runner in.mlir -e f "
                       "(see --help)");
  if (entryName.empty())
    return reportError("missing -e <function>: name the function to run");
  if (!againstFilename.empty() && !afterPasses.empty())
    return reportError("--against and --after-passes cannot be combined");
  if (optLevel > 3)
    return reportError("expected --opt-level between 0 and 3, but got " +
                       llvm::Twine(optLevel.getValue()));

  InputOptions &inputOptions = options.inputs;
  inputOptions.seed = seed;
  {
    auto [loText, hiText] = StringRef(inputRange).split(',');
    std::optional<double> lo = parseDouble(loText), hi = parseDouble(hiText);
    if (!lo || !hi || *lo > *hi)
      return reportError("invalid --input-range='" + inputRange +
                         "': expected 'lo,hi' with finite numbers lo <= hi");
    inputOptions.lo = *lo;
    inputOptions.hi = *hi;
  }
  std::optional<double> offset = parseDouble(inputOffset);
  if (!offset)
    return reportError("invalid --input-offset='" + inputOffset +
                       "': expected a finite number");
  inputOptions.offset = *offset;
  std::optional<double> atol = parseDouble(atolOption);
  std::optional<double> rtol = parseDouble(rtolOption);
  if (!atol || *atol < 0)
    return reportError("invalid --atol='" + atolOption +
                       "': expected a finite number >= 0");
  if (!rtol || *rtol < 0)
    return reportError("invalid --rtol='" + rtolOption +
                       "': expected a finite number >= 0");
  options.atol = *atol;
  options.rtol = *rtol;
  options.comparing =
      !compareName.empty() || !againstFilename.empty() || !afterPasses.empty();
  return 0;
}

/// The modules a comparison reads besides the input.
struct OtherModules {
  /// --against's module.
  std::optional<InputModule> other;
  /// The input after --after-passes.
  OwningOpRef<ModuleOp> transformed;
};

/// Adds the other side of a comparison with `programs[0]` (@`refFunc`) to
/// `programs`: --compare in the input, the function in --against's module,
/// or the function after --after-passes; those modules are kept in
/// `modules`. Returns 0, or the exit code after reporting an error.
static int
addComparedProgram(MLIRContext &context, func::FuncOp refFunc,
                   std::vector<std::unique_ptr<llvm::SourceMgr>> &sourceMgrs,
                   OtherModules &modules, SmallVector<Program> &programs) {
  std::string otherName = compareName.empty() ? entryName : compareName;
  ModuleOp otherModule = programs[0].module;
  std::string otherWhat = "@" + otherName;
  if (!againstFilename.empty()) {
    FailureOr<InputModule> parsed =
        parseInputFile(againstFilename, context, sourceMgrs);
    if (failed(parsed))
      return 1;
    modules.other = std::move(*parsed);
    otherModule = modules.other->module.get();
    otherWhat += " in " + againstFilename;
  } else if (!afterPasses.empty()) {
    std::string pipeline = afterPasses;
    if (!StringRef(pipeline).trim().starts_with("builtin.module("))
      pipeline = "builtin.module(" + pipeline + ")";
    PassManager pm(&context, ModuleOp::getOperationName());
    std::string errorMessage;
    if (failed(parseModulePipeline(pipeline, pm, errorMessage)))
      return reportError("invalid --after-passes pipeline '" + pipeline +
                         "': " + StringRef(errorMessage).trim());
    modules.transformed = programs[0].module.clone();
    if (failed(pm.run(modules.transformed.get())))
      return reportError("the --after-passes pipeline '" + pipeline +
                         "' failed");
    otherModule = modules.transformed.get();
    otherWhat += " after passes";
    // Weight preparation outlined: compare @f_prepare then @f, joined.
    if (auto f = otherModule.lookupSymbol<func::FuncOp>(otherName)) {
      otherName = joinWeightPreparation(f);
      if (otherName != f.getSymName())
        otherWhat = "@" + otherName + " after passes";
    }
  }
  auto otherFunc = lookupEntry(otherModule, otherName, otherWhat);
  if (!otherFunc)
    return reportError(otherFunc.takeError());
  if (llvm::Error err = checkSameSignature(refFunc, programs[0].what,
                                           *otherFunc, otherWhat))
    return reportError(std::move(err));
  programs.push_back(
      {otherModule, otherName, otherWhat, otherFunc->getFunctionType()});
  return 0;
}

/// Prints the results of a plain run (values of the small ones, or of all
/// with --print).
static void printResults(ArrayRef<HostTensor> results) {
  for (auto [i, tensor] : llvm::enumerate(results))
    printTensor(llvm::outs(), "result " + std::to_string(i), tensor,
                printAll || tensor.data.size() <= 64);
  if (results.empty())
    llvm::outs() << "no results\n";
}

/// Compares the results of `programs[1]` with those of the reference
/// `programs[0]`, prints the errors and PASS or FAIL. Returns the exit code.
static int compareResults(ArrayRef<Program> programs,
                          ArrayRef<std::vector<HostTensor>> results,
                          const RunOptions &options) {
  if (printAll)
    for (const auto &[program, programResults] : llvm::zip(programs, results))
      for (auto [i, tensor] : llvm::enumerate(programResults))
        printTensor(llvm::outs(),
                    program.what + " result " + std::to_string(i), tensor,
                    /*printValues=*/true);

  bool pass = true;
  for (auto [i, refAndGot] : llvm::enumerate(llvm::zip(results[0], results[1]))) {
    auto &[ref, got] = refAndGot;
    Comparison cmp = compareTensors(ref, got, options.atol, options.rtol);
    llvm::outs() << "result " << i << ": max_abs_err="
                 << formatValue(cmp.maxAbsErr)
                 << " max_rel_err=" << formatValue(cmp.maxRelErr)
                 << " mismatches=" << cmp.numMismatches << '/'
                 << cmp.numElements << " (atol=" << formatValue(options.atol)
                 << ", rtol=" << formatValue(options.rtol) << ")\n";
    if (cmp.firstMismatch) {
      size_t k = *cmp.firstMismatch;
      llvm::outs() << "  first mismatch at "
                   << formatIndex(ref.type, k) << ": "
                   << formatValue(ref.data[k], 9) << " (" << programs[0].what
                   << ") vs " << formatValue(got.data[k], 9) << " ("
                   << programs[1].what << ")\n";
      pass = false;
    }
  }
  llvm::outs() << (pass ? "PASS" : "FAIL") << '\n';
  return pass ? 0 : 1;
}

static int runMain(int argc, char **argv) {
  cl::HideUnrelatedOptions(runnerCategory);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &llvm::errs()))
    return 1;
  RunOptions options;
  if (int rc = checkOptions(options))
    return rc;

  // Context: every upstream dialect, extension and pass, plus ours.
  registerAllPasses();
  fusion::registerFusionPasses();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  fusion::registerFusionDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr diagSourceMgr;
  SourceMgrDiagnosticHandler diagHandler(diagSourceMgr, &context);

  // Parse.
  std::vector<std::unique_ptr<llvm::SourceMgr>> sourceMgrs;
  FailureOr<InputModule> input =
      parseInputFile(inputFilename, context, sourceMgrs);
  if (failed(input))
    return 1;
  std::string refWhat = "@" + entryName;
  auto refFunc = lookupEntry(input->module.get(), entryName, refWhat);
  if (!refFunc)
    return reportError(refFunc.takeError());

  // The other side of the comparison, if any.
  OtherModules otherModules;
  SmallVector<Program> programs;
  programs.push_back({input->module.get(), entryName, refWhat,
                      refFunc->getFunctionType()});
  if (options.comparing)
    if (int rc = addComparedProgram(context, *refFunc, sourceMgrs,
                                    otherModules, programs))
      return rc;

  // Compile.
  for (const Program &program : programs) {
    auto func = cast<func::FuncOp>(
        SymbolTable::lookupSymbolIn(program.module, program.funcName));
    addEntryWrapper(func);
  }
  std::vector<std::shared_ptr<Executable>> executables;
  if (failed(compilePrograms(programs, executables, collectSharedLibs())))
    return 1;
  if (dumpLowered)
    return 0;

  // Run.
  std::vector<HostTensor> inputs =
      generateInputs(programs[0].type, options.inputs);
  if (printInputs)
    for (auto [i, tensor] : llvm::enumerate(inputs))
      printTensor(llvm::outs(), "input " + std::to_string(i), tensor,
                  /*printValues=*/true);
  std::vector<std::vector<HostTensor>> results(programs.size());
  for (auto [program, executable, programResults] :
       llvm::zip(programs, executables, results))
    if (llvm::Error err = executable->run(program.funcName, inputs,
                                          program.type.getResults(),
                                          programResults))
      return reportError("running " + program.what +
                         " failed: " + llvm::toString(std::move(err)));

  // Report.
  if (!options.comparing) {
    printResults(results[0]);
    return 0;
  }
  return compareResults(programs, results, options);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  int rc = runMain(argc, argv);
  llvm::outs().flush();
  return rc;
}
