//===- Status.cpp - per-thread status of the runtime ----------------------===//
//
// One record per thread: the pending status (cleared by fusionrtClearStatus)
// and the last-error message (kept until the next failure, so that a caller
// may clear first and read the text afterwards).
//
//===----------------------------------------------------------------------===//

#include "Status.h"

#include <utility>

namespace fusionrt {
namespace {

struct ThreadStatus {
  fusionrtStatus pending = FUSIONRT_SUCCESS;
  std::string lastMessage;
};

ThreadStatus &threadStatus() {
  thread_local ThreadStatus status;
  return status;
}

} // namespace

bool hasPendingFailure() { return threadStatus().pending != FUSIONRT_SUCCESS; }

void recordFailure(fusionrtStatus status, std::string message) {
  ThreadStatus &state = threadStatus();
  if (status == FUSIONRT_SUCCESS || state.pending != FUSIONRT_SUCCESS)
    return;
  state.pending = status;
  state.lastMessage = std::move(message);
}

std::string driverFailure(const char *entryPoint, const char *driverCall, CUresult result,
                          const std::string &detail) {
  std::string message = std::string(entryPoint) + ": " + driverCall + " failed with " +
                        cudaErrorName(result);
  if (!detail.empty())
    message += " (" + detail + ")";
  return message;
}

bool recordIfFailed(CUresult result, const char *entryPoint, const char *driverCall,
                    const std::string &detail) {
  if (result == CUDA_SUCCESS)
    return false;
  recordFailure(FUSIONRT_ERROR_CUDA, driverFailure(entryPoint, driverCall, result, detail));
  return true;
}

fusionrtStatus reportError(fusionrtStatus status, std::string message) {
  if (status != FUSIONRT_SUCCESS)
    threadStatus().lastMessage = std::move(message);
  return status;
}

std::string cudaErrorName(CUresult result) {
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  if (const char *builtin = builtinCudaErrorName(result))
    return builtin;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

} // namespace fusionrt

using namespace fusionrt;

extern "C" {

const char *fusionrtStatusName(fusionrtStatus status) {
  switch (status) {
  case FUSIONRT_SUCCESS:
    return "success";
  case FUSIONRT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case FUSIONRT_ERROR_CUDA:
    return "CUDA error";
  case FUSIONRT_ERROR_LIMIT_EXCEEDED:
    return "limit exceeded";
  case FUSIONRT_ERROR_UNSUPPORTED:
    return "unsupported";
  case FUSIONRT_STATUS_MIN_ENUM:
  case FUSIONRT_STATUS_MAX_ENUM:
    break;
  }
  return "unknown status";
}

const char *fusionrtGetLastError(void) { return threadStatus().lastMessage.c_str(); }

fusionrtStatus fusionrtPeekStatus(void) { return threadStatus().pending; }

fusionrtStatus fusionrtClearStatus(void) {
  ThreadStatus &state = threadStatus();
  fusionrtStatus status = state.pending;
  state.pending = FUSIONRT_SUCCESS;
  return status;
}

} // extern "C"
