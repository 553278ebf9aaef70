// util/mapped_file.h — a whole file's bytes in memory, read-only, for the readers that parse bytes.
//
// Model: the file is mapped (mmap, PROT_READ, MAP_PRIVATE) for the object's lifetime, so a reader
// parses it as one span without copying it first (a checkpoint of a few GiB costs page cache, not
// a second buffer). Every reader in vdnn has an in-memory entry point (parse_idx, parse_safetensors,
// parse_model_text, parse_device_profile); its file entry point maps the file and calls it, so the
// fuzzers (fuzz/) exercise exactly the code that reads files. The file must not shrink while it is
// mapped (vdnn replaces files atomically, util/atomic_file.h, so readers never see that happen).
// A regular file whose size reads as 0 but that holds bytes (procfs and sysfs files: /proc/version)
// is read into memory instead, up to kMaxUnsizedBytes, so its reader sees what it holds.
//
//   MappedFile f("run.safetensors");          // throws vdnn::Error naming the path
//   SafeTensors t = parse_safetensors(f.bytes(), f.path());
//   Graph g = parse_model_text(MappedFile("my.json").text(), "my.json");
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vdnn {

class MappedFile {
 public:
  // Throws vdnn::Error naming `path` when it cannot be opened, is not a regular file (saying what
  // it is, util/file_kind.h; a FIFO is never waited on), or cannot be mapped. An empty file gives
  // an empty span.
  explicit MappedFile(std::string path);
  static constexpr size_t kMaxUnsizedBytes = size_t{16} << 20;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  void read_unsized(int fd);

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string unsized_;  // the bytes of a file whose size reads as 0 (data_ points here, nothing mapped)
};

}  // namespace vdnn
