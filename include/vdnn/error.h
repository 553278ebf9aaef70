// vdnn/error.h — the three tiers of failure.
//
// Model: anything a user, a file or a device can cause (bad model file, missing data, a budget too
// small) throws vdnn::Error with a one-line message that names the file/layer/flag and what would be
// valid. A broken internal invariant is VDNN_CHECK (throws vdnn::InternalError naming file and line).
// Vendor failures: oneDNN errors become vdnn::Error naming the layer where its kernel is made
// (backends/cpu/kernel.cc); CUDA, cuDNN and cuBLAS calls go through VDNN_CUDA_CHECK
// (backends/cuda/cuda_check.h), which names the failing statement.
// The library never calls exit(); the CLI catches Error, prints "error: <what>" and exits non-zero.
// A message is valid UTF-8 whatever bytes it quotes (an ONNX node's name, a folder's): bytes that
// are not are written `\xNN` (util/utf8.h), so Python's str and JSON can hold it.
//
//   if (kernel < 1) throw vdnn::Error("model.json: layer 'conv1': field 'kernel' must be >= 1, got 0");
//   VDNN_CHECK(offset + bytes <= size_, "chunk " << id << " overruns its block");
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace vdnn {

namespace detail {
[[noreturn]] void throw_internal(const char* file, int line, const std::string& what);
// `what` with bytes that are not UTF-8 written as \xNN (util/utf8.h).
std::string utf8_message(const std::string& what);
}  // namespace detail

// A problem the caller can fix: bad input, impossible configuration, out of memory.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(detail::utf8_message(what)) {}
};

// A bug in vdnn: an invariant that must hold did not.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(detail::utf8_message(what)) {}
};

}  // namespace vdnn

// Builds a message with stream syntax: VDNN_MSG("layer " << name << " has " << n << " inputs").
#define VDNN_MSG(...) (static_cast<std::ostringstream&&>(std::ostringstream() << __VA_ARGS__).str())

// Throws vdnn::Error with a streamed message.
#define VDNN_THROW(...) throw ::vdnn::Error(VDNN_MSG(__VA_ARGS__))

// Internal invariant; failing it is a bug in vdnn, never the user's fault.
#define VDNN_CHECK(cond, stream_expr)                                                                           \
  do {                                                                                                          \
    if (!(cond))                                                                                                \
      ::vdnn::detail::throw_internal(__FILE__, __LINE__, VDNN_MSG("check failed: " #cond ": " << stream_expr)); \
  } while (0)
