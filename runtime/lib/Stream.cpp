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
// Side streams: a host function's first stream is its primary (the call
// stream, or a new one). A `gpu.wait async` made while the primary is live
// forks a side stream: a stream of this thread's pool, of the greatest
// priority or the least (fusionrtNextSideStreamPriority), that waits for
// the work enqueued on the primary so far (an event). Synchronizing a side
// stream joins it: the primary waits for the side's work (an event), the
// host does not; destroying it returns it to the pool. A tensor map
// uploaded on the primary while side streams are live is waited for by them
// too (a kernel there may read it). So kernels on side streams run beside
// one another (fusion-plan-kernels' side kernels: a weight gradient's
// persistent GEMM on one of the greatest priority, whose CTAs are placed
// first, and a norm gradient on one of the least in the SMs it leaves),
// asynchronously and under CUDA graph capture alike.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Status.h"
#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

#include <algorithm>
#include <utility>
#include <vector>

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

/// A side stream of this thread's pool: its context and priority.
struct SideStream {
  CUcontext context;
  bool greatest; // the greatest priority, else the least
  CUstream stream;
};
/// The streams of the host function running on this thread, in creation
/// order (the primary first), the side streams it may reuse and those it
/// uses, and the priority its next side stream gets. Side streams are kept
/// for the thread's life.
struct ThreadStreams {
  std::vector<CUstream> live;
  std::vector<SideStream> idleSides, busySides;
  bool nextGreatest = true;
};
thread_local ThreadStreams threadStreams;

bool isLiveSide(void *stream) {
  const std::vector<CUstream> &live = threadStreams.live;
  return live.size() > 1 &&
         std::find(live.begin() + 1, live.end(),
                   static_cast<CUstream>(stream)) != live.end();
}

/// Makes `waiter` wait for the work enqueued on `source` so far.
bool streamWaitsFor(CUstream waiter, CUstream source, const char *entryPoint) {
  CUevent event = nullptr;
  if (recordIfFailed(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), entryPoint,
                     "cuEventCreate"))
    return false;
  bool ok = !recordIfFailed(cuEventRecord(event, source), entryPoint,
                            "cuEventRecord") &&
            !recordIfFailed(cuStreamWaitEvent(waiter, event, /*Flags=*/0),
                            entryPoint, "cuStreamWaitEvent");
  // Released once the wait is done; the wait stays enqueued.
  recordReleaseFailure(cuEventDestroy(event), entryPoint, "cuEventDestroy");
  return ok;
}

/// A side stream forked from the primary: one of the pool's in `context` of
/// the priority asked for (fusionrtNextSideStreamPriority), or a new one.
void *forkSideStream() {
  CUcontext context = nullptr;
  if (!activateContextOrRecord("mgpuStreamCreate", &context))
    return nullptr;
  ThreadStreams &streams = threadStreams;
  bool greatest = streams.nextGreatest;
  streams.nextGreatest = true;
  auto it = std::find_if(streams.idleSides.begin(), streams.idleSides.end(),
                         [&](const SideStream &entry) {
                           return entry.context == context &&
                                  entry.greatest == greatest;
                         });
  SideStream side{context, greatest, nullptr};
  if (it != streams.idleSides.end()) {
    side = *it;
    streams.idleSides.erase(it);
  } else {
    int least = 0, most = 0;
    if (recordIfFailed(cuCtxGetStreamPriorityRange(&least, &most),
                       "mgpuStreamCreate", "cuCtxGetStreamPriorityRange") ||
        recordIfFailed(cuStreamCreateWithPriority(&side.stream,
                                                  CU_STREAM_NON_BLOCKING,
                                                  greatest ? most : least),
                       "mgpuStreamCreate", "cuStreamCreateWithPriority"))
      return nullptr;
  }
  streams.busySides.push_back(side);
  streams.live.push_back(side.stream);
  streamWaitsFor(side.stream, streams.live.front(), "mgpuStreamCreate");
  return side.stream;
}

} // namespace

void fusionrt::resetCallStreams() { threadStreams.live.clear(); }

void fusionrt::orderSideStreamsAfter(CUstream stream, const char *entryPoint) {
  const std::vector<CUstream> &live = threadStreams.live;
  for (size_t i = 1; i < live.size(); ++i)
    if (live[i] != stream && !streamWaitsFor(live[i], stream, entryPoint))
      return;
}

extern "C" {

void fusionrtNextSideStreamPriority(int32_t greatest) {
  threadStreams.nextGreatest = greatest != 0;
}

fusionrtStatus fusionrtSetCallStream(void *stream) {
  resetCallStreams();
  callStream.active = true;
  // NULL (PyTorch's default stream) as the explicit legacy handle: the same
  // stream, but not null, so that allocations stay stream-ordered from the
  // pool instead of the null stream's synchronous cuMemAlloc/cuMemFree.
  callStream.stream = stream ? static_cast<CUstream>(stream) : CU_STREAM_LEGACY;
  return FUSIONRT_SUCCESS;
}

fusionrtStatus fusionrtClearCallStream(void) {
  resetCallStreams();
  callStream = CallStream();
  return FUSIONRT_SUCCESS;
}

void *mgpuStreamCreate(void) {
  if (hasPendingFailure())
    return nullptr;
  // A second stream of the running host function: a side stream.
  if (!threadStreams.live.empty())
    return forkSideStream();
  // The caller's stream: its context is the caller's business (every entry
  // point that enqueues work activates the selected device's context).
  if (callStream.active) {
    threadStreams.live.push_back(callStream.stream);
    return callStream.stream;
  }
  if (!activateContextOrRecord("mgpuStreamCreate"))
    return nullptr;
  CUstream stream = nullptr;
  if (recordIfFailed(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "mgpuStreamCreate",
                     "cuStreamCreate"))
    return nullptr;
  threadStreams.live.push_back(stream);
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  ThreadStreams &streams = threadStreams;
  auto live = std::find(streams.live.begin(), streams.live.end(),
                        static_cast<CUstream>(stream));
  bool side = live != streams.live.end() && live != streams.live.begin();
  if (live != streams.live.end())
    streams.live.erase(live);
  // A side stream goes back to the pool.
  auto busy = std::find_if(
      streams.busySides.begin(), streams.busySides.end(),
      [&](const SideStream &entry) { return entry.stream == stream; });
  if (side && busy != streams.busySides.end()) {
    streams.idleSides.push_back(*busy);
    streams.busySides.erase(busy);
    return;
  }
  if (isCallStream(stream))
    return; // the caller's
  if (stream)
    recordReleaseFailure(cuStreamDestroy(static_cast<CUstream>(stream)), "mgpuStreamDestroy",
                         "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  // A side stream joins the primary: the host does not wait.
  if (isLiveSide(stream)) {
    if (!hasPendingFailure())
      streamWaitsFor(threadStreams.live.front(), static_cast<CUstream>(stream),
                     "mgpuStreamSynchronize");
    return;
  }
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
