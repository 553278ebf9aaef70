// util/atomic_file.h — writes an output file all or nothing, so a crash never leaves half a file
// behind, and never replaces what the user's path names with something of another kind.
//
// Model: every file vdnn writes goes through AtomicFile. What the path names decides how:
//  - nothing, or a regular file: the bytes go to a temporary file in the same folder (same file
//    system, so the rename is atomic); commit() fsyncs it, renames it over the target and fsyncs
//    the folder, so after a crash or power loss readers find either the old file or the new one.
//  - a symbolic link: it is followed (to its end, even if that does not exist yet) and the above
//    happens beside its target; the link stays a link.
//  - a device or a FIFO (/dev/null, /dev/stdout, a named pipe): it is opened and written as it is,
//    never renamed over; every write and the close are checked (/dev/full fails with ENOSPC). A
//    FIFO that no process reads within 2 s is refused naming it, instead of blocking forever.
//  - a folder: refused with an error naming the path.
// A file that is never committed (an exception while writing) is removed by the destructor, and
// unlink_temp_files_in_flight() removes the temporary files of every AtomicFile alive (for a signal
// handler: util/interrupt.h). What no handler can clean — the temporary file of a process killed
// with SIGKILL mid-write — is removed by the next commit to the same target: a temporary file of
// that target whose process id names no live process.
//
//   AtomicFile out("run.safetensors");          // throws vdnn::Error naming the path
//   out.write(header.data(), header.size());
//   out.write(weights.data(), weights.size() * sizeof(float));
//   out.commit();                               // now "run.safetensors" is the new file
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace vdnn {

// Throws vdnn::Error (naming `flag` and the path) unless AtomicFile can write `path`: a new file in
// a writable folder, a regular file in a writable folder, or a writable device or FIFO (symbolic
// links followed); a folder is refused. Opens no device or FIFO; for a file, creates and removes the
// temporary file the write would (a folder such as /proc refuses it). For checking a flag before a
// long run.
void check_can_create_file(const std::string& path, const std::string& flag);

// check_can_create_file for each (flag, path) with a non-empty path, and no two flags naming the
// same regular file. Every command calls this once, with all its output flags, before any work.
void check_output_files(const std::vector<std::pair<std::string, std::string>>& flags_and_paths);

// Removes the temporary file of every AtomicFile alive. Async-signal-safe (unlink(2) only).
void unlink_temp_files_in_flight() noexcept;

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  void forget_temp() noexcept;

  std::string path_;       // as given, for messages
  std::string target_;     // path_ with symbolic links followed
  std::string temp_path_;  // empty when writing a device or FIFO directly
  int fd_ = -1;
  int slot_ = -1;  // in the registry of temporary files, or -1
  bool committed_ = false;
};

}  // namespace vdnn
