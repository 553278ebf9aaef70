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
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) VDNN_THROW(path_ << ": cannot map " << size_ << " bytes (" << std::strerror(errno) << ")");
  data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace vdnn
