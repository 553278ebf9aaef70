// tests/util/hostile_paths.h — output paths that are not a plain new file: a character device, a
// full disk, a FIFO, a symbolic link, a folder, a file in a missing folder. For the tests that
// every writer (util/atomic_file.h) keeps what a path names and either writes through or fails
// with one clear error.
//
//   fs::path dir = ...;                                   // a fresh temporary folder
//   HostilePath p = make_hostile_path(dir, "report", HostileKind::kFifo);
//   FifoReader reader(p.path);                            // drains it while a writer runs
//   ... write to p.path ...
//   EXPECT_EQ(kind_of(p.path), p.kind_before);            // still a FIFO
//   EXPECT_FALSE(reader.finish().empty());
//
// Devices are made with mknod in the temporary folder (the same major/minor as /dev/null and
// /dev/full), so a writer that replaced its path replaces only that copy, never the system's;
// where mknod is not allowed (not root) the system's nodes are used, which a non-root writer
// cannot replace anyway.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace vdnn::test {

enum class HostileKind { kCharDevice, kFullDisk, kFifo, kSymlink, kFolder, kMissingFolder };
inline const std::vector<HostileKind> kAllHostileKinds = {HostileKind::kCharDevice, HostileKind::kFullDisk,
                                                          HostileKind::kFifo,       HostileKind::kSymlink,
                                                          HostileKind::kFolder,     HostileKind::kMissingFolder};

inline const char* to_string(HostileKind k) {
  switch (k) {
    case HostileKind::kCharDevice:
      return "char device";
    case HostileKind::kFullDisk:
      return "full disk";
    case HostileKind::kFifo:
      return "FIFO";
    case HostileKind::kSymlink:
      return "symlink";
    case HostileKind::kFolder:
      return "folder";
    case HostileKind::kMissingFolder:
      return "missing folder";
  }
  return "?";
}

// What lstat says a path is: "missing", "file", "folder", "symlink", "FIFO", "char device 1:3", ...
inline std::string kind_of(const std::filesystem::path& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return "missing";
  if (S_ISREG(st.st_mode)) return "file";
  if (S_ISDIR(st.st_mode)) return "folder";
  if (S_ISLNK(st.st_mode)) return "symlink";
  if (S_ISFIFO(st.st_mode)) return "FIFO";
  if (S_ISCHR(st.st_mode))
    return "char device " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
  return "other";
}

struct HostilePath {
  HostileKind kind;
  std::filesystem::path path;         // what to give the writer
  std::filesystem::path link_target;  // kSymlink: where the link points (a file in a subfolder)
  std::string kind_before;            // kind_of(path) before the write
};

// A character device with /dev/null's (minor 3) or /dev/full's (minor 7) numbers, in `dir`.
inline std::filesystem::path make_mem_device(const std::filesystem::path& dir, const std::string& name,
                                             unsigned minor_number) {
  const std::filesystem::path p = dir / name;
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, minor_number)) == 0) return p;
  return minor_number == 7 ? "/dev/full" : "/dev/null";
}

inline HostilePath make_hostile_path(const std::filesystem::path& dir, const std::string& name, HostileKind kind) {
  namespace fs = std::filesystem;
  HostilePath h{kind, dir / name, {}, {}};
  switch (kind) {
    case HostileKind::kCharDevice:
      h.path = make_mem_device(dir, name, 3);
      break;
    case HostileKind::kFullDisk:
      h.path = make_mem_device(dir, name, 7);
      break;
    case HostileKind::kFifo:
      ::mkfifo(h.path.c_str(), 0666);
      break;
    case HostileKind::kSymlink:
      fs::create_directories(dir / (name + ".targets"));
      h.link_target = dir / (name + ".targets") / "target";
      fs::create_symlink(fs::path(name + ".targets") / "target", h.path);  // relative, as users make them
      break;
    case HostileKind::kFolder:
      fs::create_directories(h.path);
      break;
    case HostileKind::kMissingFolder:
      h.path = dir / (name + ".missing") / "out";
      break;
  }
  h.kind_before = kind_of(h.path);
  return h;
}

// Temporary files ("NAME.tmp-PID-N") anywhere under `dir`: a writer must leave none.
inline std::vector<std::string> temp_files_under(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) found.push_back(e.path().string());
  return found;
}

// Reads everything written into a FIFO, in a thread, until the writer closes it (or finish() is
// called and nothing more comes), so a writer never blocks on it.
class FifoReader {
 public:
  explicit FifoReader(const std::filesystem::path& fifo)
      : fd_(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)), thread_([this] { drain(); }) {}
  ~FifoReader() { finish(); }
  // What was read; stops waiting once no writer is left.
  const std::string& finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return data_;
  }

 private:
  void drain() {
    if (fd_ < 0) return;
    bool writer_seen = false;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 20);
      if (ready > 0 && (p.revents & (POLLIN | POLLHUP))) {
        char buf[4096];
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
          data_.append(buf, static_cast<size_t>(n));
          writer_seen = true;
          continue;
        }
        if (n == 0 && (writer_seen || (p.revents & POLLHUP))) return;  // the writer closed it
      }
      if (stop_) return;
    }
  }

  int fd_;
  std::atomic<bool> stop_{false};
  std::string data_;
  std::thread thread_;
};

}  // namespace vdnn::test
