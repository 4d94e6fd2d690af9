#pragma once
// Checks that a call is refused with a message naming what it must name (the node, the op, the
// file, the reason): EXPECT_TRUE(test::throws_naming<Error>([&] { ... }, {"node 'n'", "size 0"})).
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace ts::test {

// Success when `f` throws an E whose message holds every one of `parts`; the failure quotes the
// message and the first part it lacks, or says that `f` returned. An exception of another type
// propagates (the test errs, as an uncaught one would).
template <typename E = std::exception>
::testing::AssertionResult throws_naming(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      if (what.find(p) == std::string::npos) return ::testing::AssertionFailure() << "the message lacks '" << p << "': " << what;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "nothing was thrown";
}

// The message of the E that `f` throws; "" when it returns.
template <typename E = std::exception>
std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace ts::test
