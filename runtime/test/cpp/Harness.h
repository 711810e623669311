//===- Harness.h - the runtime unit tests' harness --------------*- C++ -*-===//
//
// The runtime's unit tests (fusion-runtime-tests) run without a GPU and
// without a working driver: everything checked is decided before any driver
// call, or holds for any failing driver (the stub library, no device).
// Registered with CTest and run by lit (test/Runtime/runtime-unit-tests.test),
// which also checks the printed messages. Prints "[ OK ] <test>" per test and
// "  message: <text>" for each error message a test produces.
//
// Each test file defines kSuiteOrder before its tests. Tests run by suite
// order, then in the order they appear in their file, so that the output lit
// checks does not depend on the link order: 0 StatusTests.cpp,
// 1 TensorMapTests.cpp, 2 EntryPointTests.cpp, 3 DeviceTests.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_TEST_HARNESS_H
#define FUSION_RUNTIME_TEST_HARNESS_H

#include "Status.h"
#include "TensorMap.h"
#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace fusionrt_test {

//===----------------------------------------------------------------------===//
// A small harness
//===----------------------------------------------------------------------===//

struct TestCase {
  const char *name;
  int suiteOrder;
  void (*run)();
};

/// Every registered test, in registration order.
std::vector<TestCase> &testCases();

/// The number of failed checks of the running test.
extern int currentFailures;

struct Registrar {
  Registrar(const char *name, int suiteOrder, void (*run)()) {
    testCases().push_back({name, suiteOrder, run});
  }
};

#define TEST(name)                                                                                 \
  void name();                                                                                     \
  ::fusionrt_test::Registrar registrar_##name(#name, kSuiteOrder, name);                           \
  void name()

void fail(const char *file, int line, const std::string &what);

inline std::string show(const std::string &value) { return "\"" + value + "\""; }
template <typename T> std::string show(T value) { return std::to_string(value); }

#define EXPECT_TRUE(cond)                                                                          \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::fusionrt_test::fail(__FILE__, __LINE__, "expected " #cond);                                \
  } while (0)

#define EXPECT_EQ(a, b)                                                                            \
  do {                                                                                             \
    auto valueA = (a);                                                                             \
    auto valueB = (b);                                                                             \
    if (!(valueA == valueB))                                                                       \
      ::fusionrt_test::fail(__FILE__, __LINE__,                                                    \
                            "expected " #a " == " #b ", but got " +                                \
                                ::fusionrt_test::show(valueA) + " and " +                          \
                                ::fusionrt_test::show(valueB));                                    \
  } while (0)

#define EXPECT_CONTAINS(text, needle)                                                              \
  do {                                                                                             \
    std::string haystack = (text);                                                                 \
    if (haystack.find(needle) == std::string::npos)                                                \
      ::fusionrt_test::fail(__FILE__, __LINE__,                                                    \
                            "expected \"" + haystack + "\" to contain \"" + (needle) + "\"");     \
  } while (0)

/// Prints the last-error message, for lit to check.
std::string printedMessage();

//===----------------------------------------------------------------------===//
// Fixtures
//===----------------------------------------------------------------------===//

/// A 16-byte aligned address that is never dereferenced.
inline const void *const kAddress = reinterpret_cast<const void *>(uintptr_t(0x7f0000001000));

/// A valid 2-D bf16 map: a 4096 x 512 tensor, 64 x 64 box, 128-byte swizzle.
fusionrtTensorMapSpec validSpec();

/// Validates `spec`, expects an invalid-argument status whose message contains
/// `expected`, and prints the message.
void expectInvalid(const fusionrtTensorMapSpec &spec, const std::string &expected);

/// Clears any status a previous test left.
void resetStatus();

/// True when the driver in this process works (never with the stub library).
bool driverWorks();

} // namespace fusionrt_test

#endif // FUSION_RUNTIME_TEST_HARNESS_H
