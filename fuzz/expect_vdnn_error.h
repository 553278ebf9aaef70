// fuzz/expect_vdnn_error.h — the one rule every fuzz target applies to a reader's outcome.
//
// Model: a reader given any bytes either returns a value or throws vdnn::Error (bad input, said in
// one line). Everything else is a finding and must reach libFuzzer as a crash: another exception
// (vdnn::InternalError, nlohmann::json's type_error, std::bad_alloc, std::length_error) escapes and
// aborts; sanitizer reports, hangs (-timeout) and huge allocations (-malloc_limit_mb) are caught by
// libFuzzer itself.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     return vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_idx({data, size}, "fuzz"); });
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vdnn/error.h"

namespace vdnn::fuzz {

// Runs `read`; swallows vdnn::Error only. Returns 0, as LLVMFuzzerTestOneInput must.
template <typename Read>
int expect_vdnn_error(Read&& read) {
  try {
    read();
  } catch (const vdnn::Error&) {
  }
  return 0;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace vdnn::fuzz
