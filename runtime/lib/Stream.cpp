//===- Stream.cpp - streams and events ------------------------------------===//
//
// Creating a stream or an event, recording an event and making a stream wait
// start work, and are skipped while a failure is pending. Synchronizing and
// destroying always run: they wait for or release what earlier calls made.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Status.h"
#include "fusion_runtime_mgpu.h"

using namespace fusionrt;

namespace {

/// Records a failure of a wait or release call; shutdown results are expected
/// from global destructors at exit.
void recordReleaseFailure(CUresult result, const char *entryPoint, const char *driverCall) {
  if (!isShutdownResult(result))
    recordIfFailed(result, entryPoint, driverCall);
}

} // namespace

extern "C" {

void *mgpuStreamCreate(void) {
  if (hasPendingFailure() || !activateContextOrRecord("mgpuStreamCreate"))
    return nullptr;
  CUstream stream = nullptr;
  if (recordIfFailed(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "mgpuStreamCreate",
                     "cuStreamCreate"))
    return nullptr;
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (stream)
    recordReleaseFailure(cuStreamDestroy(static_cast<CUstream>(stream)), "mgpuStreamDestroy",
                         "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  // A null stream is the legacy default stream: valid, so it is synchronized too.
  if (!activateContextOrRecord("mgpuStreamSynchronize"))
    return;
  recordIfFailed(cuStreamSynchronize(static_cast<CUstream>(stream)), "mgpuStreamSynchronize",
                 "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (hasPendingFailure())
    return;
  recordIfFailed(cuStreamWaitEvent(static_cast<CUstream>(stream), static_cast<CUevent>(event),
                                   /*Flags=*/0),
                 "mgpuStreamWaitEvent", "cuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  if (hasPendingFailure() || !activateContextOrRecord("mgpuEventCreate"))
    return nullptr;
  CUevent event = nullptr;
  if (recordIfFailed(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "mgpuEventCreate",
                     "cuEventCreate"))
    return nullptr;
  return event;
}

void mgpuEventDestroy(void *event) {
  if (event)
    recordReleaseFailure(cuEventDestroy(static_cast<CUevent>(event)), "mgpuEventDestroy",
                         "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  if (event)
    recordIfFailed(cuEventSynchronize(static_cast<CUevent>(event)), "mgpuEventSynchronize",
                   "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  if (hasPendingFailure())
    return;
  recordIfFailed(cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)),
                 "mgpuEventRecord", "cuEventRecord");
}

} // extern "C"
