#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "vdnn/error.h"

namespace vdnn {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void check_can_create_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  const fs::path folder = folder_of(path);
  if (!fs::is_directory(folder, ec))
    VDNN_THROW(flag << " " << path << ": folder " << folder.string() << " does not exist");
  if (fs::is_directory(path, ec)) VDNN_THROW(flag << " " << path << ": is a folder, expected a file name");
  if (access(folder.c_str(), W_OK) != 0)
    VDNN_THROW(flag << " " << path << ": cannot write in folder " << folder.string() << " (" << errno_text()
                    << ")");
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<unsigned> counter{0};
  const fs::path target(path_);
  const std::string name = VDNN_MSG("." << target.filename().string() << ".tmp-" << getpid() << "-" << counter++);
  temp_path_ = (folder_of(path_) / name).string();
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) VDNN_THROW(path_ << ": cannot create a temporary file next to it (" << errno_text() << ")");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const std::string why = errno_text();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
  committed_ = true;  // nothing left to clean up
  VDNN_THROW(path_ << ": " << what << " failed (" << why << ")");
}

void AtomicFile::write(const void* data, size_t bytes) {
  VDNN_CHECK(fd_ >= 0 && !committed_, "write to " << path_ << " after commit");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  VDNN_CHECK(fd_ >= 0 && !committed_, "commit of " << path_ << " twice");
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename");
  committed_ = true;
  // The rename is durable only once the folder's entry is on disk.
  const int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) VDNN_THROW(path_ << ": cannot open its folder to fsync it (" << errno_text() << ")");
  const int rc = ::fsync(dir);
  const std::string why = errno_text();
  ::close(dir);
  if (rc != 0) VDNN_THROW(path_ << ": fsync of its folder failed (" << why << ")");
}

}  // namespace vdnn
