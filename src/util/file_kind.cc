#include "util/file_kind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vdnn/error.h"

namespace vdnn {

namespace {

// What a mode is, as the errors say it ("is a FIFO").
std::string kind_of_mode(mode_t mode) {
  if (S_ISREG(mode)) return "is a regular file";
  if (S_ISDIR(mode)) return "is a folder";
  if (S_ISFIFO(mode)) return "is a FIFO";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a file";
}

// Why a path that stat(2) or open(2) did not find is missing: "does not exist", or for a link whose
// target is gone, which target ("is a link to '/data/x.png', which does not exist").
std::string missing(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::string target(4096, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n >= 0) return "is a link to '" + target.substr(0, static_cast<size_t>(n)) + "', which does not exist";
  }
  return "does not exist";
}

// "" when stat(path) has `wanted` as its type; else why not.
std::string unless_kind(const std::string& path, mode_t wanted) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? missing(path)
                                               : VDNN_MSG("cannot be examined (" << std::strerror(errno) << ")");
  return (st.st_mode & S_IFMT) == wanted ? "" : kind_of_mode(st.st_mode);
}

}  // namespace

std::string not_a_regular_file(const std::string& path) { return unless_kind(path, S_IFREG); }
std::string not_a_folder(const std::string& path) { return unless_kind(path, S_IFDIR); }

int open_regular_file(const std::string& path) {
  // Looked at before it is opened, since opening a device can do something (a watchdog starts);
  // looked at again once open, in case the path changed in between.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode))
    VDNN_THROW(path << ": " << kind_of_mode(before.st_mode) << ", not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) VDNN_THROW(path << ": " << missing(path));
    VDNN_THROW(path << ": cannot open (" << std::strerror(error) << ")");
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = VDNN_MSG("cannot be examined (" << std::strerror(errno) << ")");
  else if (!S_ISREG(st.st_mode))
    why = kind_of_mode(st.st_mode) + ", not a regular file";
  if (!why.empty()) {
    ::close(fd);
    VDNN_THROW(path << ": " << why);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // reads of a regular file: as before
  return fd;
}

}  // namespace vdnn
