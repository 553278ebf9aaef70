// util/file_kind.h — what is at a path, said in errors, and opening only regular files.
//
// Model: a reader that wants a file or a folder and finds something else says what it found — "is
// a FIFO", "is a character device", "is a folder", "does not exist" — never a bare "not found"
// for a path that exists. Opening for reading never blocks: a FIFO is refused before anyone waits
// for a writer (open(2) of a FIFO blocks until one comes; O_NONBLOCK opens it at once, then fstat
// tells it apart). Links are followed, as reading the path would.
//
//   if (std::string why = not_a_folder(dir); !why.empty()) VDNN_THROW("data folder '" << dir << "' " << why);
//   int fd = open_regular_file("x.png");   // throws "x.png: is a FIFO, not a regular file"
#pragma once

#include <string>

namespace vdnn {

// "" when `path` is a regular file; else why not: "does not exist", "is a folder", "is a FIFO",
// "is a character device", "is a block device", "is a socket", "cannot be examined (<reason>)".
std::string not_a_regular_file(const std::string& path);
// The same for a folder ("" when it is one; "is a regular file", "is a FIFO", ...).
std::string not_a_folder(const std::string& path);

// A read-only, close-on-exec descriptor of `path` when it is a regular file; throws vdnn::Error
// "<path>: <why>, not a regular file" (or "cannot open (...)") without blocking.
int open_regular_file(const std::string& path);

}  // namespace vdnn
