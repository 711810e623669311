//===- Main.cpp - the runtime unit tests' harness and main ----------------===//
//
// Runs every test that the test files register, in the order Harness.h
// describes, and prints "all N runtime tests passed" or how many failed.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <algorithm>

namespace fusionrt_test {

std::vector<TestCase> &testCases() {
  static std::vector<TestCase> cases;
  return cases;
}

int currentFailures = 0;

void fail(const char *file, int line, const std::string &what) {
  std::printf("  FAILED at %s:%d: %s\n", file, line, what.c_str());
  ++currentFailures;
}

std::string printedMessage() {
  std::string message = fusionrtGetLastError();
  std::printf("  message: %s\n", message.c_str());
  return message;
}

fusionrtTensorMapSpec validSpec() {
  fusionrtTensorMapSpec spec;
  std::memset(&spec, 0, sizeof(spec));
  spec.dataType = FUSIONRT_DATA_TYPE_BFLOAT16;
  spec.rank = 2;
  spec.globalAddress = kAddress;
  spec.sizes[0] = 4096;
  spec.sizes[1] = 512;
  spec.strides[0] = 512;
  spec.strides[1] = 1;
  spec.boxSizes[0] = 64;
  spec.boxSizes[1] = 64;
  spec.swizzle = FUSIONRT_SWIZZLE_128B;
  return spec;
}

void expectInvalid(const fusionrtTensorMapSpec &spec, const std::string &expected) {
  EXPECT_EQ(fusionrtValidateTensorMap(&spec), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), expected);
}

void resetStatus() { fusionrtClearStatus(); }

bool driverWorks() {
  static const bool works = [] {
    int count = 0;
    return fusionrtGetDeviceCount(&count) == FUSIONRT_SUCCESS && count > 0;
  }();
  return works;
}

} // namespace fusionrt_test

int main() {
  using namespace fusionrt_test;
  // Within a file, tests register in declaration order; across files, in
  // link order, which the suite order overrides.
  std::vector<TestCase> tests = testCases();
  std::stable_sort(tests.begin(), tests.end(), [](const TestCase &a, const TestCase &b) {
    return a.suiteOrder < b.suiteOrder;
  });
  int failedTests = 0;
  for (const TestCase &test : tests) {
    currentFailures = 0;
    std::printf("[ RUN ] %s\n", test.name);
    test.run();
    std::printf("[ %s ] %s\n", currentFailures ? "FAILED" : "OK", test.name);
    failedTests += currentFailures ? 1 : 0;
  }
  if (failedTests) {
    std::printf("%d of %zu runtime tests failed\n", failedTests, tests.size());
    return 1;
  }
  std::printf("all %zu runtime tests passed\n", tests.size());
  return 0;
}
