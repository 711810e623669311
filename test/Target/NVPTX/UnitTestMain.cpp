//===- UnitTestMain.cpp - runs the target unit tests ----------------------===//
//
//   fusion-target-tests [suite]
//
// Runs the tests of `suite` (all without one) in their files' order, one line
// each, then "<n> tests, <f> failed expectations"; exits 1 on any failure and
// 2 on a suite without tests.
//
//===----------------------------------------------------------------------===//

#include "UnitTest.h"

#include <cstring>

int main(int argc, char **argv) {
  const char *suite = argc > 1 ? argv[1] : nullptr;
  size_t ran = 0;
  for (const fusion_test::TestCase &t : fusion_test::tests()) {
    if (suite && std::strcmp(suite, t.suite) != 0)
      continue;
    int before = fusion_test::failures();
    t.fn();
    ++ran;
    std::printf("[ %s ] %s\n", fusion_test::failures() == before ? "OK" : "FAILED",
                t.name);
  }
  if (!ran) {
    std::printf("no tests in suite '%s'\n", suite ? suite : "");
    return 2;
  }
  std::printf("%zu tests, %d failed expectations\n", ran, fusion_test::failures());
  return fusion_test::failures() ? 1 : 0;
}
