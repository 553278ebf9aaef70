// util/atomic_file.h — writes a file all or nothing, so a crash never leaves half a file behind.
//
// Model: the bytes go to a temporary file in the target's folder (same file system, so the rename
// is atomic); commit() fsyncs it, renames it over the target and fsyncs the folder, so after a
// crash or power loss readers find either the old file or the complete new one. A file that is
// never committed (an exception while writing) is removed by the destructor.
//
//   AtomicFile out("run.safetensors");          // throws vdnn::Error naming the path
//   out.write(header.data(), header.size());
//   out.write(weights.data(), weights.size() * sizeof(float));
//   out.commit();                               // now "run.safetensors" is the new file
#pragma once

#include <cstddef>
#include <string>

namespace vdnn {

// Throws vdnn::Error (naming `flag` and the path) unless a file can be created at `path`: its
// folder exists and is writable, and `path` is not a folder. For checking a flag before a long run.
void check_can_create_file(const std::string& path, const std::string& flag);

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

  std::string path_, temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace vdnn
