//===- Invoke.cpp - one foreign call per compiled-function call -----------===//
//
// fusionrtInvoke runs a compiled host function for a caller that cannot call
// it cheaply itself: the Python loader, whose ctypes call costs about half a
// microsecond per argument (an 8-tensor function takes 48 words). The loader
// hands over one packet instead (fusion_runtime.h): the function, its
// argument words, the device, the call stream; the runtime checks the pending
// status, selects the device, sets and clears the call stream, calls the
// function with the words as its arguments, synchronizes if asked, and
// returns (and clears) the resulting status.
//
// The function takes MLIR's expanded memref descriptors: pointers and 64-bit
// integers only. It is called through a pointer whose parameters are all
// int64_t, one caller per argument count (kCallers). Pointers and int64_t
// are passed alike (the INTEGER class of the x86-64 System V ABI, general
// registers on AArch64), which is what makes this call equivalent to the
// one ctypes makes.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Status.h"
#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

using namespace fusionrt;

namespace {

static_assert(sizeof(void *) == sizeof(int64_t), "compiled functions take 64-bit words");

template <size_t> using Word = int64_t;
using Caller = void (*)(void *function, const int64_t *words);

template <size_t... I> void callWith(void *function, const int64_t *words, std::index_sequence<I...>) {
  using Function = void (*)(Word<I>...);
  reinterpret_cast<Function>(function)(words[I]...);
}

template <size_t N> void callWithWords(void *function, const int64_t *words) {
  callWith(function, words, std::make_index_sequence<N>());
}

template <size_t... N> constexpr std::array<Caller, sizeof...(N)> makeCallers(std::index_sequence<N...>) {
  return {{&callWithWords<N>...}};
}

/// kCallers[n] calls a function of n words.
constexpr std::array<Caller, FUSIONRT_INVOKE_MAX_WORDS + 1> kCallers =
    makeCallers(std::make_index_sequence<FUSIONRT_INVOKE_MAX_WORDS + 1>());

constexpr int64_t kKnownFlags = FUSIONRT_INVOKE_CALL_STREAM | FUSIONRT_INVOKE_SYNCHRONIZE;

} // namespace

extern "C" {

int32_t fusionrtInvoke(const int64_t *packet) {
  if (!packet)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInvoke: expected a packet, but got a null pointer");
  void *function = reinterpret_cast<void *>(static_cast<intptr_t>(packet[0]));
  const int64_t count = packet[1], device = packet[2], flags = packet[3];
  void *stream = reinterpret_cast<void *>(static_cast<intptr_t>(packet[4]));
  if (!function)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInvoke: expected a function, but got a null pointer");
  if (count < 0 || count > FUSIONRT_INVOKE_MAX_WORDS)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInvoke: expected 0.." +
                           std::to_string(FUSIONRT_INVOKE_MAX_WORDS) + " argument words, but got " +
                           std::to_string(count));
  if (device < 0 || device > INT32_MAX)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInvoke: expected device ordinal >= 0, but got " +
                           std::to_string(device));
  if (flags & ~kKnownFlags)
    return reportError(FUSIONRT_ERROR_INVALID_ARGUMENT,
                       "fusionrtInvoke: expected flags of FUSIONRT_INVOKE_CALL_STREAM and "
                       "FUSIONRT_INVOKE_SYNCHRONIZE, but got " +
                           std::to_string(flags));
  // A failure left pending by earlier work would make the function skip its
  // work: report it, as the caller's, without calling.
  if (fusionrtStatus pending = fusionrtClearStatus())
    return static_cast<int32_t>(pending) | FUSIONRT_INVOKE_NOT_CALLED;

  selectDevice(static_cast<int>(device));
  const bool onCallStream = flags & FUSIONRT_INVOKE_CALL_STREAM;
  if (onCallStream)
    fusionrtSetCallStream(stream);
  resetCallStreams();
  beginInvocation();
  kCallers[count](function, packet + FUSIONRT_INVOKE_HEADER_WORDS);
  endInvocation();
  if (onCallStream)
    fusionrtClearCallStream();
  if (flags & FUSIONRT_INVOKE_SYNCHRONIZE)
    mgpuStreamSynchronize(stream);
  return fusionrtClearStatus();
}

} // extern "C"
