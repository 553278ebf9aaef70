// tests/error_of.h — the message of the vdnn::Error that a statement throws, for tests that check
// what a user would read.
//   EXPECT_NE(error_of([&] { read_idx(path); }).find("truncated"), std::string::npos);
#pragma once

#include <gtest/gtest.h>

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

}  // namespace vdnn::test
