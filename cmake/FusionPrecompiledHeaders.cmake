# Precompiled MLIR headers for the project's libraries.
#
# Parsing MLIR's dialect headers dominates the build: a kernel-generator file
# of lib/Conversion/FusionToGPU takes about 44 s with GCC, of which 0.5 s is
# code generation, and 7 s with these headers precompiled. One header set,
# compiled once in fusion_pch (an object library of one empty file with the
# flags every library gets), is reused by each library's object target
# (fusion_use_precompiled_headers), so CI's two builds (GCC; clang with
# sanitizers) compile it once each. Only upstream headers go in: a change to
# the dialect rebuilds nothing more than it did.
#
#   -DFUSION_PRECOMPILED_HEADERS=OFF   plain builds (for include-what-you-use
#                                      checks, or a compiler without PCH)
option(FUSION_PRECOMPILED_HEADERS "Precompile the MLIR headers the libraries share" ON)

set(FUSION_PCH_HEADERS
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/BuiltinTypes.h>
  <mlir/IR/ImplicitLocOpBuilder.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Pass/Pass.h>
  <mlir/Transforms/DialectConversion.h>
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Bufferization/IR/Bufferization.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/LLVMIR/NVVMDialect.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/NVGPU/IR/NVGPUDialect.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
)

if(FUSION_PRECOMPILED_HEADERS)
  add_library(fusion_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/FusionPrecompiledHeaders.cpp)
  set_target_properties(fusion_pch PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # The flags LLVM gives its libraries' objects (-fno-exceptions, ...): a
  # precompiled header is used only under the flags it was compiled with.
  llvm_update_compile_flags(fusion_pch)
  target_precompile_headers(fusion_pch PRIVATE ${FUSION_PCH_HEADERS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC does not keep LLVM's `#pragma GCC diagnostic` state in a PCH: the
    # ArrayRef(initializer_list) constructor's suppressed warning reappears.
    target_compile_options(fusion_pch PUBLIC -Wno-init-list-lifetime)
  endif()
endif()

# Reuses fusion_pch's precompiled headers in TARGET's sources (a library
# made by add_mlir_library: its object target obj.TARGET compiles them).
function(fusion_use_precompiled_headers target)
  if(NOT FUSION_PRECOMPILED_HEADERS)
    return()
  endif()
  set(objects ${target})
  if(TARGET obj.${target})
    set(objects obj.${target})
  endif()
  target_precompile_headers(${objects} REUSE_FROM fusion_pch)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${objects} PRIVATE -Wno-init-list-lifetime)
  endif()
endfunction()
