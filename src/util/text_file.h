// util/text_file.h — writes a whole text file (traces, pictures) all or nothing, with one clear error.
//
// A convenience over AtomicFile (util/atomic_file.h): a reader never sees half a file.
//
//   vdnn::write_text_file("memory.svg", svg_text);   // throws vdnn::Error naming the file
#pragma once

#include <string>

namespace vdnn {

// Creates or replaces `path` with `text`. Throws vdnn::Error naming the file if it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace vdnn
