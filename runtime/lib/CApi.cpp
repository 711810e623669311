//===- CApi.cpp - device selection and tensor maps of the C API -----------===//
//
// The fusionrt* functions return their status; their messages name the
// function. The status functions are in Status.cpp, the device queries in
// DeviceInfo.cpp.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "DevicePool.h"
#include "Status.h"
#include "TensorMap.h"

#include <string>

using namespace fusionrt;

extern "C" {

fusionrtStatus fusionrtSetDevice(int device) {
  if (device < 0)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtSetDevice: expected device ordinal >= 0, but got " +
                           std::to_string(device));
  selectDevice(device);
  return FUSIONRT_SUCCESS;
}

int fusionrtGetDevice(void) { return selectedDevice(); }

fusionrtStatus fusionrtInit(int device) {
  if (device < 0)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInit: expected device ordinal >= 0, but got " +
                           std::to_string(device));
  selectDevice(device);
  const char *failedCall = nullptr;
  CUresult result = activateContext(nullptr, nullptr, &failedCall);
  if (result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure("fusionrtInit", failedCall, result,
                                     "device " + std::to_string(device)));
  return FUSIONRT_SUCCESS;
}

fusionrtStatus fusionrtReleaseCachedMemory(void) {
  if (CUresult result = trimPools(); result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure("fusionrtReleaseCachedMemory", "cuMemPoolTrimTo", result));
  return FUSIONRT_SUCCESS;
}

int fusionrtDataTypeSize(int dataType) { return tensorMapElementBytes(dataType); }

fusionrtStatus fusionrtValidateTensorMap(const fusionrtTensorMapSpec *spec) {
  if (!spec)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtValidateTensorMap: expected a tensor-map spec, but got a null "
                       "pointer");
  std::string error = validateTensorMap(requestFromSpec(*spec));
  if (!error.empty())
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT, "fusionrtValidateTensorMap: " + error);
  return FUSIONRT_SUCCESS;
}

fusionrtStatus fusionrtEncodeTensorMap(const fusionrtTensorMapSpec *spec, fusionrtTensorMap *out) {
  if (!spec || !out)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       std::string("fusionrtEncodeTensorMap: expected a tensor-map spec and an "
                                   "output, but got a null ") +
                           (spec ? "output" : "spec"));
  TensorMapRequest request = requestFromSpec(*spec);
  std::string error = validateTensorMap(request);
  if (!error.empty())
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT, "fusionrtEncodeTensorMap: " + error);
  // cuTensorMapEncodeTiled needs an initialized driver, not a context.
  CUresult result = cuInit(/*Flags=*/0);
  if (result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure("fusionrtEncodeTensorMap", "cuInit", result));
  result = encodeTensorMap(request, reinterpret_cast<CUtensorMap *>(out));
  if (result != CUDA_SUCCESS)
    return reportError(FUSIONRT_ERROR_CUDA,
                       driverFailure("fusionrtEncodeTensorMap", "cuTensorMapEncodeTiled", result));
  return FUSIONRT_SUCCESS;
}

} // extern "C"
