//===- Stream.cpp - streams and events ------------------------------------===//
//
// Creating a stream or an event, recording an event and making a stream wait
// start work, and are skipped while a failure is pending. Synchronizing and
// destroying always run: they wait for or release what earlier calls made.
//
// The call stream (fusionrtSetCallStream): while a thread has one, the
// compiled host code's `gpu.wait async` (mgpuStreamCreate) gets the caller's
// stream instead of a new one, and its final `gpu.wait` (synchronize, then
// destroy) leaves that stream alone: the call is asynchronous on it.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Status.h"
#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

using namespace fusionrt;

namespace {

/// This thread's call stream, when it has one.
struct CallStream {
  bool active = false;
  CUstream stream = nullptr;
};
thread_local CallStream callStream;

} // namespace

CUstream fusionrt::currentCallStream() {
  return callStream.active ? callStream.stream : nullptr;
}

namespace {

bool isCallStream(void *stream) {
  return callStream.active && static_cast<CUstream>(stream) == callStream.stream;
}

/// Records a failure of a wait or release call; shutdown results are expected
/// from global destructors at exit.
void recordReleaseFailure(CUresult result, const char *entryPoint, const char *driverCall) {
  if (!isShutdownResult(result))
    recordIfFailed(result, entryPoint, driverCall);
}

} // namespace

extern "C" {

fusionrtStatus fusionrtSetCallStream(void *stream) {
  callStream.active = true;
  // NULL (PyTorch's default stream) as the explicit legacy handle: the same
  // stream, but not null, so that allocations stay stream-ordered from the
  // pool instead of the null stream's synchronous cuMemAlloc/cuMemFree.
  callStream.stream = stream ? static_cast<CUstream>(stream) : CU_STREAM_LEGACY;
  return FUSIONRT_SUCCESS;
}

fusionrtStatus fusionrtClearCallStream(void) {
  callStream = CallStream();
  return FUSIONRT_SUCCESS;
}

void *mgpuStreamCreate(void) {
  if (hasPendingFailure())
    return nullptr;
  // The caller's stream: its context is the caller's business (every entry
  // point that enqueues work activates the selected device's context).
  if (callStream.active)
    return callStream.stream;
  if (!activateContextOrRecord("mgpuStreamCreate"))
    return nullptr;
  CUstream stream = nullptr;
  if (recordIfFailed(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "mgpuStreamCreate",
                     "cuStreamCreate"))
    return nullptr;
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (isCallStream(stream))
    return; // the caller's
  if (stream)
    recordReleaseFailure(cuStreamDestroy(static_cast<CUstream>(stream)), "mgpuStreamDestroy",
                         "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  // The caller's stream: the call stays asynchronous on it.
  if (isCallStream(stream))
    return;
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
