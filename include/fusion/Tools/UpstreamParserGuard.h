//===- UpstreamParserGuard.h - inputs libMLIR crashes on --------*- C++ -*-===//
//
// libMLIR 22.1.8's custom parsers of linalg.broadcast and linalg.transpose
// report a malformed `dimensions = [...]` / `permutation = [...]` list and
// then segfault (they add the null attribute the failed parse left; Debian's
// mlir-opt dies the same way; test/fuzz/README.md); the region builders of
// some linalg named ops crash on ins and outs mixing index elements; the
// parser of tensor.from_elements aborts on a type of 2^32 elements or more;
// the attribute parser crashes on a dense array of index elements
// (array<index: ...>, also through a type alias).
// Our tools check their input for these before they parse it, so that such
// an input ends in a diagnostic, never in a crash: where upstream aborts, our
// code must not feed it. Remove this when the LLVM the project builds on has
// the fix (test/fuzz/regressions-diagnostics.test's canary says when).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TOOLS_UPSTREAMPARSERGUARD_H
#define FUSION_TOOLS_UPSTREAMPARSERGUARD_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::fusion {

/// Where and why `text` would crash libMLIR 22's parser: the byte offset of
/// the offending list and a message, or nothing when it would not.
struct UpstreamParserHazard {
  size_t offset;
  std::string message;
};
std::optional<UpstreamParserHazard> findUpstreamParserHazard(llvm::StringRef text);

} // namespace mlir::fusion

#endif // FUSION_TOOLS_UPSTREAMPARSERGUARD_H
