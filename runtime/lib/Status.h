//===- Status.h - per-thread status of the runtime --------------*- C++ -*-===//
//
// The mgpu* entry points return nothing, so a failure becomes the calling
// thread's pending status: the first failure is kept (entry point, driver call,
// CUDA error name, kernel), later ones are dropped, and entry points that start
// work skip it until the status is cleared. The fusionrt* C API returns its
// status and only leaves its message behind (reportError).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_STATUS_H
#define FUSION_RUNTIME_STATUS_H

#include "fusion_runtime.h"

#include <cuda.h>

#include <string>

namespace fusionrt {

/// Returns true when a failure is pending on this thread. Entry points that
/// start work or create objects call this first and return early when it is.
bool hasPendingFailure();

/// Makes (`status`, `message`) this thread's pending failure, unless one is
/// pending already. The message also becomes the last-error message.
void recordFailure(fusionrtStatus status, std::string message);

/// Records a failed driver call of `entryPoint` as the pending failure:
/// "<entryPoint>: <driverCall> failed with <CUDA error name>[ (<detail>)]".
/// Returns true when `result` is a failure.
bool recordIfFailed(CUresult result, const char *entryPoint, const char *driverCall,
                    const std::string &detail = {});

/// Sets the last-error message without making a status pending, and returns
/// `status`: for C API functions, which hand their status back themselves.
fusionrtStatus reportError(fusionrtStatus status, std::string message);

/// The driver's name for `result` ("CUDA_ERROR_INVALID_VALUE"). Falls back to
/// a table in the runtime when the driver cannot name it (the toolkit's stub
/// library names nothing), and to "CUresult <n>" for unknown codes.
std::string cudaErrorName(CUresult result);

/// The runtime's own table behind cudaErrorName; nullptr for unknown codes.
const char *builtinCudaErrorName(CUresult result);

/// "<driverCall> failed with <name>" as a message for C API functions.
std::string driverFailure(const char *entryPoint, const char *driverCall, CUresult result,
                          const std::string &detail = {});

} // namespace fusionrt

#endif // FUSION_RUNTIME_STATUS_H
