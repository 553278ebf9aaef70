// AtomicFile and check_output_files against paths that are not a plain new file: a device or FIFO
// is written as it is (never renamed over), a symbolic link is written through and stays a link, a
// folder is refused, a full disk fails with the errno, and no temporary file is ever left behind,
// not even when a signal ends the process mid-write.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/atomic_file.h"
#include "util/hostile_paths.h"
#include "util/interrupt.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_atomic_file {

namespace fs = std::filesystem;
using test::HostileKind;
using test::kind_of;
using test::make_hostile_path;
using test::temp_files_under;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// The message of the vdnn::Error that `f` throws, or "" if it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class AtomicFileKinds : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_atomic_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    EXPECT_EQ(temp_files_under(dir_), std::vector<std::string>{});
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(AtomicFileKinds, ARegularFileIsReplacedWhole) {
  const std::string p = (dir_ / "a.txt").string();
  write_file(p, "old contents, longer than the new");
  write_file(p, "new");
  EXPECT_EQ(read_all(p), "new");
  EXPECT_EQ(kind_of(p), "file");
}

TEST_F(AtomicFileKinds, ASymlinkIsWrittenThroughAndStaysALink) {
  const auto h = make_hostile_path(dir_, "link", HostileKind::kSymlink);
  write_file(h.path.string(), "first");  // the link dangles: its target is created
  EXPECT_EQ(kind_of(h.path), "symlink");
  EXPECT_EQ(read_all(h.link_target), "first");
  write_file(h.path.string(), "second");  // and then replaced beside the target
  EXPECT_EQ(kind_of(h.path), "symlink");
  EXPECT_EQ(read_all(h.link_target), "second");
  fs::create_symlink(h.path.filename(), dir_ / "link2");  // a chain of links
  write_file((dir_ / "link2").string(), "third");
  EXPECT_EQ(kind_of(dir_ / "link2"), "symlink");
  EXPECT_EQ(read_all(h.link_target), "third");
}

TEST_F(AtomicFileKinds, AFifoIsWrittenThroughAndStaysAFifo) {
  const auto h = make_hostile_path(dir_, "pipe", HostileKind::kFifo);
  test::FifoReader reader(h.path);
  write_file(h.path.string(), "through the pipe");
  EXPECT_EQ(reader.finish(), "through the pipe");
  EXPECT_EQ(kind_of(h.path), "FIFO");
}

TEST_F(AtomicFileKinds, AFifoNobodyReadsIsRefusedNamingItInsteadOfBlocking) {
  const auto h = make_hostile_path(dir_, "unread", HostileKind::kFifo);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_of([&] { write_file(h.path.string(), "nobody listens"); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(error.find(h.path.string() + ": is a FIFO that no process opened for reading"), std::string::npos) << error;
  EXPECT_GE(seconds, 1.5);   // a reader started just after the writer still gets its bytes ...
  EXPECT_LT(seconds, 10.0);  // ... but nobody waits forever
  EXPECT_EQ(kind_of(h.path), "FIFO");
}

TEST_F(AtomicFileKinds, ACharacterDeviceStaysADevice) {
  const auto h = make_hostile_path(dir_, "null", HostileKind::kCharDevice);
  ASSERT_EQ(h.kind_before, "char device 1:3");
  write_file(h.path.string(), "into the void");
  EXPECT_EQ(kind_of(h.path), "char device 1:3");
}

TEST_F(AtomicFileKinds, AFullDiskFailsWithTheReasonAndStaysADevice) {
  const auto h = make_hostile_path(dir_, "full", HostileKind::kFullDisk);
  const std::string e = error_of([&] { write_file(h.path.string(), "no room"); });
  EXPECT_NE(e.find(h.path.string() + ": write failed (No space left on device)"), std::string::npos) << e;
  EXPECT_EQ(kind_of(h.path), "char device 1:7");
}

TEST_F(AtomicFileKinds, AFolderIsRefusedAndLeftAlone) {
  const auto h = make_hostile_path(dir_, "folder", HostileKind::kFolder);
  fs::create_symlink("folder", dir_ / "to_folder");
  for (const fs::path& p : {h.path, dir_ / "to_folder"}) {
    EXPECT_NE(error_of([&] { write_file(p.string(), "x"); }).find("is a folder, expected a file name"),
              std::string::npos);
    EXPECT_NE(error_of([&] { check_can_create_file(p.string(), "--out"); }).find("--out " + p.string()),
              std::string::npos);
  }
  EXPECT_EQ(kind_of(h.path), "folder");
  EXPECT_TRUE(fs::is_empty(h.path));
}

TEST_F(AtomicFileKinds, CheckAcceptsWhatAWriteWouldWriteThrough) {
  for (HostileKind k : {HostileKind::kCharDevice, HostileKind::kFullDisk, HostileKind::kFifo, HostileKind::kSymlink}) {
    const auto h = make_hostile_path(dir_, std::string("ok") + std::to_string(static_cast<int>(k)), k);
    EXPECT_EQ(error_of([&] { check_can_create_file(h.path.string(), "--out"); }), "") << test::to_string(k);
    EXPECT_EQ(kind_of(h.path), h.kind_before);  // checking opens nothing, so a FIFO does not block
  }
}

TEST_F(AtomicFileKinds, CheckNamesTheFlagAndWhatIsWrongWithTheFolder) {
  const auto missing = make_hostile_path(dir_, "m", HostileKind::kMissingFolder);
  EXPECT_NE(error_of([&] {
              check_can_create_file(missing.path.string(), "--report");
            }).find("--report " + missing.path.string()),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_can_create_file(missing.path.string(), "--report"); }).find("does not exist"),
            std::string::npos);
  write_file((dir_ / "plain").string(), "a file, not a folder");
  EXPECT_NE(error_of([&] {
              check_can_create_file((dir_ / "plain" / "x.json").string(), "--report");
            }).find("is not a folder"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(missing.path.parent_path()));
}

TEST_F(AtomicFileKinds, TwoFlagsMayNotNameOneFileButMayShareADevice) {
  const std::string a = (dir_ / "a.json").string();
  const std::string e = error_of([&] { check_output_files({{"--trace", a}, {"--svg", ""}, {"--report", a}}); });
  EXPECT_NE(e.find("--trace and --report both name " + a), std::string::npos) << e;
  fs::create_symlink("a.json", dir_ / "b.json");
  EXPECT_NE(error_of([&] { check_output_files({{"--trace", a}, {"--report", (dir_ / "b.json").string()}}); }), "");
  const auto null = make_hostile_path(dir_, "null", HostileKind::kCharDevice);
  EXPECT_EQ(error_of([&] {
              check_output_files({{"--trace", null.path.string()}, {"--report", null.path.string()}});
            }),
            "");
}

TEST_F(AtomicFileKinds, TemporaryFilesInFlightAreRemovedOnRequest) {
  AtomicFile out((dir_ / "w.bin").string());
  out.write("abc", 3);
  ASSERT_EQ(temp_files_under(dir_).size(), 1u);
  unlink_temp_files_in_flight();  // what the signal handler does
  EXPECT_EQ(temp_files_under(dir_), std::vector<std::string>{});
}

TEST_F(AtomicFileKinds, AKilledWritersTemporaryFileIsRemovedByTheNextCommitAndALiveOnesIsKept) {
  // A process killed with SIGKILL mid-write leaves ".w.bin.tmp-<pid>-<n>"; no handler runs.
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);  // reaped: its pid names no process now
  const fs::path orphan = dir_ / (".w.bin.tmp-" + std::to_string(gone) + "-0");
  const fs::path alive = dir_ / (".w.bin.tmp-" + std::to_string(getppid()) + "-3");  // a live writer's
  const fs::path other = dir_ / (".x.bin.tmp-" + std::to_string(gone) + "-0");       // another target's
  for (const fs::path& p : {orphan, alive, other}) std::ofstream(p) << "half";
  write_file((dir_ / "w.bin").string(), "whole");
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(read_all(dir_ / "w.bin"), "whole");
  fs::remove(alive);
  fs::remove(other);
}

// "fast" death tests (fork, the default): the child writes in this fixture's folder, which
// TearDown then finds free of temporary files.
using AtomicFileKindsDeathTest = AtomicFileKinds;

TEST_F(AtomicFileKindsDeathTest, CtrlCMidWriteLeavesNoTemporaryFile) {
  const std::string p = (dir_ / "w.bin").string();
  EXPECT_EXIT(
      {
        install_interrupt_handler();
        AtomicFile out(p);
        out.write("abc", 3);
        std::raise(SIGINT);
      },
      ::testing::ExitedWithCode(130), "interrupted");
  EXPECT_FALSE(fs::exists(p));
}

TEST_F(AtomicFileKindsDeathTest, WhileDeferredTheFirstSignalIsAFlagAndTheSecondExits) {
  const std::string p = (dir_ / "w.bin").string();
  EXPECT_EXIT(
      {
        install_interrupt_handler();
        const DeferInterrupts defer;
        AtomicFile out(p);
        std::raise(SIGTERM);
        if (interrupt_signal() != SIGTERM) std::_Exit(3);  // still running, with the flag set
        std::raise(SIGINT);
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(130), "interrupted");
}

}  // namespace test_atomic_file
}  // namespace vdnn
