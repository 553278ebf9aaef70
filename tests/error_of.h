// tests/error_of.h — the message of the vdnn::Error that a statement throws, for tests that check
// what a user would read.
//   EXPECT_NE(error_of([&] { read_idx(path); }).find("truncated"), std::string::npos);
//   expect_error([&] { read_idx(path); }, {"x.idx", "truncated"});   // one line, every fragment
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "vdnn/error.h"

namespace vdnn::test {

// Runs `fn` and returns the message of the vdnn::Error it throws; not throwing fails the test
// (and returns ""). Other exceptions propagate, so gtest reports them as they are.
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected vdnn::Error";
  return "";
}

// Expects `fn` to throw a vdnn::Error of one line containing every fragment.
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> fragments) {
  const std::string what = error_of(fn);
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  for (const std::string& s : fragments) EXPECT_NE(what.find(s), std::string::npos) << s << " not in: " << what;
}

}  // namespace vdnn::test
