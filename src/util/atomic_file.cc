#include "util/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "vdnn/error.h"

namespace vdnn {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

std::string errno_text() { return std::strerror(errno); }

// `path` with symbolic links in its last component followed to the end (which may not exist yet:
// writing through a dangling link creates its target, as the shell's `>` does).
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string to(static_cast<size_t>(PATH_MAX), '\0');
    const ssize_t n = ::readlink(p.c_str(), to.data(), to.size());
    if (n < 0) return p;
    to.resize(static_cast<size_t>(n));
    p = fs::path(to).is_absolute() ? to : (fs::path(p).parent_path() / to).string();
  }
  VDNN_THROW(path << ": too many levels of symbolic links");
}

enum class Kind { kMissing, kRegular, kFolder, kStream };  // kStream: a device, FIFO or socket

Kind kind_of(const std::string& target) {
  struct stat st;
  if (::stat(target.c_str(), &st) != 0) return Kind::kMissing;
  if (S_ISDIR(st.st_mode)) return Kind::kFolder;
  return S_ISREG(st.st_mode) ? Kind::kRegular : Kind::kStream;
}

bool is_fifo(const std::string& target) {
  struct stat st;
  return ::stat(target.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// A write descriptor of a device, FIFO or socket. open(2) of a FIFO for writing blocks until some
// process opens it for reading, forever if none does: it is opened without blocking instead, which
// fails at once (ENXIO) while no reader is there; vdnn tries again for kFifoReaderWait (a reader
// started just after vdnn), then gives up naming the path. The descriptor is made blocking again
// for the writes (a reader slower than vdnn slows it down, as with a shell's `>`).
constexpr auto kFifoReaderWait = std::chrono::seconds(2);

int open_stream_for_writing(const std::string& path, const std::string& target) {
  const auto give_up = std::chrono::steady_clock::now() + kFifoReaderWait;
  int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  while (fd < 0 && errno == ENXIO && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  }
  if (fd < 0 && errno == ENXIO && is_fifo(target))
    VDNN_THROW(path << ": is a FIFO that no process opened for reading within "
                    << std::chrono::seconds(kFifoReaderWait).count() << " s; start its reader first (e.g. `cat " << path
                    << " &`), or name a regular file");
  if (fd < 0) VDNN_THROW(path << ": cannot open it for writing (" << errno_text() << ")");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    VDNN_THROW(path << ": cannot open it for writing (" << why << ")");
  }
  return fd;
}

// The temporary files of the AtomicFiles alive, readable from a signal handler: a slot is free (0),
// being filled (1) or holds a path (2).
constexpr int kSlots = 64;
struct TempSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
TempSlot temp_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int remember_temp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int free = 0;
    if (!temp_slots[i].state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(temp_slots[i].path, path.c_str(), path.size() + 1);
    temp_slots[i].state.store(2);
    return i;
  }
  return -1;  // more than kSlots files in flight: this one is only removed by its destructor
}

// The temporary files of `target` (".<name>.tmp-<pid>-<n>" beside it) left by processes that are
// gone (killed with SIGKILL mid-write): removed. A live process's, this one's included, are kept.
void remove_orphaned_temps(const std::string& target) {
  const std::string prefix = "." + fs::path(target).filename().string() + ".tmp-";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(folder_of(target), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789-") != std::string::npos) continue;
    const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0 || pid == getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    fs::remove(e.path(), ec);  // best effort: another writer may have removed it first
  }
}

}  // namespace

void unlink_temp_files_in_flight() noexcept {
  for (TempSlot& s : temp_slots)
    if (s.state.load() == 2) ::unlink(s.path);
}

void check_can_create_file(const std::string& path, const std::string& flag) {
  const std::string target = follow_links(path);
  const std::string shown = target == path ? path : path + " (a link to " + target + ")";
  switch (kind_of(target)) {
    case Kind::kFolder:
      VDNN_THROW(flag << " " << shown << ": is a folder, expected a file name");
    case Kind::kStream:
      if (access(target.c_str(), W_OK) != 0)
        VDNN_THROW(flag << " " << shown << ": cannot write to it (" << errno_text() << ")");
      return;  // a FIFO is not opened here: opening and closing it would end its reader's input
    case Kind::kMissing:
    case Kind::kRegular:
      break;
  }
  std::error_code ec;
  const fs::path folder = folder_of(target);
  if (!fs::is_directory(folder, ec))
    VDNN_THROW(flag << " " << shown << ": folder " << folder.string()
                    << (fs::exists(folder, ec) ? " is not a folder" : " does not exist"));
  if (access(folder.c_str(), W_OK) != 0)
    VDNN_THROW(flag << " " << shown << ": cannot write in folder " << folder.string() << " (" << errno_text() << ")");
  // A folder can pass access() and still refuse a new file (/proc as root): create the temporary
  // file the write will, and remove it.
  try {
    const AtomicFile probe(path);
  } catch (const Error& e) {
    VDNN_THROW(flag << " " << e.what());
  }
}

void check_output_files(const std::vector<std::pair<std::string, std::string>>& flags_and_paths) {
  std::vector<std::pair<std::string, fs::path>> files;  // (flag, absolute target) of regular files
  for (const auto& [flag, path] : flags_and_paths) {
    if (path.empty()) continue;
    check_can_create_file(path, flag);
    const std::string target = follow_links(path);
    if (kind_of(target) == Kind::kStream) continue;  // two flags may both write to /dev/null
    const fs::path absolute = fs::absolute(target).lexically_normal();
    for (const auto& [other, seen] : files)
      if (seen == absolute) VDNN_THROW(other << " and " << flag << " both name " << path << ": give each its own file");
    files.emplace_back(flag, absolute);
  }
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), target_(follow_links(path_)) {
  switch (kind_of(target_)) {
    case Kind::kFolder:
      VDNN_THROW(path_ << ": is a folder, expected a file name");
    case Kind::kStream:  // written as it is: renaming over /dev/null would replace the device
      fd_ = open_stream_for_writing(path_, target_);
      return;
    case Kind::kMissing:
    case Kind::kRegular:
      break;
  }
  static std::atomic<unsigned> counter{0};
  const std::string name =
      VDNN_MSG("." << fs::path(target_).filename().string() << ".tmp-" << getpid() << "-" << counter++);
  temp_path_ = (folder_of(target_) / name).string();
  slot_ = remember_temp(temp_path_);  // before the file exists, so a signal never misses it
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const std::string why = errno_text();
    forget_temp();
    VDNN_THROW(path_ << ": cannot create a temporary file next to it (" << why << ")");
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  forget_temp();
}

void AtomicFile::forget_temp() noexcept {
  if (slot_ >= 0) temp_slots[slot_].state.store(0);
  slot_ = -1;
}

void AtomicFile::fail(const std::string& what) {
  const std::string why = errno_text();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  forget_temp();
  committed_ = true;  // nothing left to clean up
  VDNN_THROW(path_ << ": " << what << " failed (" << why << ")");
}

void AtomicFile::write(const void* data, size_t bytes) {
  VDNN_CHECK(fd_ >= 0 && !committed_, "write to " << path_ << " after commit");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = ENOSPC;
    if (n <= 0) fail("write");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  VDNN_CHECK(fd_ >= 0 && !committed_, "commit of " << path_ << " twice");
  if (temp_path_.empty()) {  // a device or FIFO: nothing to rename; a device may not fsync
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("close");
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) fail("rename");
  committed_ = true;
  forget_temp();
  remove_orphaned_temps(target_);
  // The rename is durable only once the folder's entry is on disk.
  const int dir = ::open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) VDNN_THROW(path_ << ": cannot open its folder to fsync it (" << errno_text() << ")");
  const int rc = ::fsync(dir);
  const std::string why = errno_text();
  ::close(dir);
  if (rc != 0) VDNN_THROW(path_ << ": fsync of its folder failed (" << why << ")");
}

}  // namespace vdnn
