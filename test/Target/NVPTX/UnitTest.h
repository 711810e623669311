//===- UnitTest.h - the target unit tests' small harness --------*- C++ -*-===//
//
// fusion-target-tests: TEST(suite, name) registers a test; the EXPECT_*
// macros count failed expectations and print each one's line. The binary
// (UnitTestMain.cpp) runs one suite, named as its argument, or all, prints
// "[ OK ] name" or "[ FAILED ] name" per test and a total, and exits non-zero
// on any failure; each suite's .test file checks its lines.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TEST_TARGET_NVPTX_UNITTEST_H
#define FUSION_TEST_TARGET_NVPTX_UNITTEST_H

#include <cinttypes>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fusion_test {

struct TestCase {
  const char *suite, *name;
  std::function<void()> fn;
};

inline std::vector<TestCase> &tests() {
  static std::vector<TestCase> all;
  return all;
}
inline int &failures() {
  static int count = 0;
  return count;
}
struct Register {
  Register(const char *suite, const char *name, std::function<void()> fn) {
    tests().push_back({suite, name, std::move(fn)});
  }
};

inline void expectEq(uint64_t got, uint64_t want, const char *what, int line) {
  if (got == want)
    return;
  ++failures();
  std::printf("  line %d: %s: expected 0x%016" PRIx64 ", got 0x%016" PRIx64 "\n",
              line, what, want, got);
}
inline void expectInt(int64_t got, int64_t want, const char *what, int line) {
  if (got == want)
    return;
  ++failures();
  std::printf("  line %d: %s: expected %" PRId64 ", got %" PRId64 "\n", line, what,
              want, got);
}
inline void expectTrue(bool got, const char *what, int line) {
  if (got)
    return;
  ++failures();
  std::printf("  line %d: expected %s\n", line, what);
}
inline void expectMessage(const std::optional<std::string> &got,
                          const std::string &want, int line) {
  if (got && *got == want)
    return;
  ++failures();
  std::printf("  line %d: expected the message \"%s\", got %s\n", line, want.c_str(),
              got ? ("\"" + *got + "\"").c_str() : "none");
}
inline void expectNone(const std::optional<std::string> &got, int line) {
  if (!got)
    return;
  ++failures();
  std::printf("  line %d: expected no message, got \"%s\"\n", line, got->c_str());
}

} // namespace fusion_test

#define TEST(suite, name)                                                      \
  static void name();                                                          \
  static ::fusion_test::Register register_##name(#suite, #name, name);         \
  static void name()

#define EXPECT_EQ(got, want) ::fusion_test::expectEq((got), (want), #got, __LINE__)
#define EXPECT_INT(got, want)                                                  \
  ::fusion_test::expectInt((got), (want), #got, __LINE__)
#define EXPECT_TRUE(cond) ::fusion_test::expectTrue((cond), #cond, __LINE__)
#define EXPECT_MESSAGE(got, want)                                              \
  ::fusion_test::expectMessage((got), (want), __LINE__)
#define EXPECT_NONE(got) ::fusion_test::expectNone((got), __LINE__)

#endif // FUSION_TEST_TARGET_NVPTX_UNITTEST_H
