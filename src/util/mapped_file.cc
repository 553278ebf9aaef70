#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// Closes a file descriptor when the constructor leaves, mapped or not (a mapping outlives its fd).
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
  const int fd = open_regular_file(path_);  // a FIFO is refused, not waited on
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) VDNN_THROW(path_ << ": cannot read its size (" << std::strerror(errno) << ")");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    read_unsized(fd);
    return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) VDNN_THROW(path_ << ": cannot map " << size_ << " bytes (" << std::strerror(errno) << ")");
  data_ = static_cast<const uint8_t*>(p);
}

// Reads a file whose size reads as 0 to its end: empty for an empty file, else what a kernel file
// (procfs, sysfs) makes up as it is read.
void MappedFile::read_unsized(int fd) {
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) VDNN_THROW(path_ << ": cannot read (" << std::strerror(errno) << ")");
    if (n == 0) break;
    if (unsized_.size() + static_cast<size_t>(n) > kMaxUnsizedBytes)
      VDNN_THROW(path_ << ": its size reads as 0 bytes but it holds more than " << (kMaxUnsizedBytes >> 20)
                       << " MiB (a kernel file?); copy what it holds to a regular file");
    unsized_.append(chunk, static_cast<size_t>(n));
  }
  if (unsized_.empty()) return;  // an empty file: an empty span
  data_ = reinterpret_cast<const uint8_t*>(unsized_.data());
  size_ = unsized_.size();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr && unsized_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace vdnn
