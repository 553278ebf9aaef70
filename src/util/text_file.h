// util/text_file.h — writes a whole text file (traces, pictures) all or nothing, and reads one
// (costs, profiles) with a size bound, each with one clear error.
//
// Writing is a convenience over AtomicFile (util/atomic_file.h): a reader never sees half a file.
// Reading goes through MappedFile (util/mapped_file.h), so a device or FIFO (`--costs /dev/zero`)
// is refused as "not a regular file" instead of being read forever, and a file above max_bytes is
// refused before it is copied: vdnn's JSON files are kilobytes, 64 MiB is far above any of them.
//
//   vdnn::write_text_file("memory.svg", svg_text);        // throws vdnn::Error naming the file
//   std::string t = vdnn::read_text_file("costs.json");   // the same
#pragma once

#include <cstddef>
#include <string>

namespace vdnn {

// Creates or replaces `path` with `text`. Throws vdnn::Error naming the file if it cannot.
void write_text_file(const std::string& path, const std::string& text);

inline constexpr size_t kMaxTextFileBytes = size_t{64} << 20;

// The whole of `path`. Throws vdnn::Error naming the file if it cannot be opened, is not a regular
// file, or holds more than max_bytes (the message names the size and the limit).
std::string read_text_file(const std::string& path, size_t max_bytes = kMaxTextFileBytes);

}  // namespace vdnn
