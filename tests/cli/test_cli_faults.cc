// Faults around checkpoints: kill -9 in the middle of training, then --resume, ends with the same
// weights as an uninterrupted run; a write that fails (the disk is full: here the file-size limit
// makes every write past it fail) is an error and leaves the previous checkpoint intact; a
// truncated checkpoint is refused with one clear line.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_faults {

namespace fs = std::filesystem;

const std::string kRun = "train --data synthetic --synthetic-samples 256 --batch 16 --no-eval --progress none ";

std::string hash_of(const CliRun& r) {
  const auto at = r.output.find("weights_sha256 ");
  return at == std::string::npos ? "" : r.output.substr(at + 15, 64);
}

// `dir` holds `file` and nothing else: no temporary file of an atomic write was left behind.
void expect_only_file(const fs::path& dir, const fs::path& file) {
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path(), file) << "a temporary file was left behind: " << entry.path();
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Faults, KillNineThenResumeEndsWithTheWeightsOfAnUninterruptedRun) {
  const auto dir = temp_dir("kill9");
  const std::string straight = hash_of(vdnn(kRun + "--iterations 60"));
  ASSERT_EQ(straight.size(), 64u);

  const fs::path ckpt = dir / "run.safetensors";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = std::string(VDNN_BINARY) + " " + kRun + "--iterations 60 --checkpoint-every 5 --save " +
                            ckpt.string() + " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for a checkpoint, then a little more so the kill lands mid-run (often mid-write).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(ckpt) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(fs::exists(ckpt)) << "no checkpoint within 60 s";
  const bool killed = WIFSIGNALED(status);
  const CliRun resumed =
      vdnn(kRun + "--iterations 60 --checkpoint-every 5 --save " + ckpt.string() + " --resume " + ckpt.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  if (killed) EXPECT_NE(resumed.output.find("resuming"), std::string::npos) << resumed.output;
  EXPECT_EQ(hash_of(resumed), straight) << resumed.output;
  expect_only_file(dir, ckpt);
}

TEST(Faults, AFailedWriteKeepsThePreviousCheckpoint) {
  const auto dir = temp_dir("fulldisk");
  const fs::path ckpt = dir / "run.safetensors";
  ASSERT_EQ(vdnn(kRun + "--iterations 3 --save " + ckpt.string()).exit_code, 0);
  const std::string before = file_bytes(ckpt);
  ASSERT_GT(before.size(), 100000u);
  // A file-size limit below the checkpoint's size: every write past it fails with EFBIG, as on a
  // full disk (SIGXFSZ ignored so the write returns an error instead of killing the process).
  const std::string cmd = "sh -c 'trap \"\" XFSZ; ulimit -f 64; exec " + std::string(VDNN_BINARY) + " " + kRun +
                          "--iterations 4 --save " + ckpt.string() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("error: "), std::string::npos) << out;
  EXPECT_NE(out.find(ckpt.filename().string()), std::string::npos) << "the error names the file: " << out;
  EXPECT_EQ(file_bytes(ckpt), before) << "the previous checkpoint must survive a failed write";
  expect_only_file(dir, ckpt);
}

TEST(Faults, ATruncatedCheckpointIsRefusedWithOneLine) {
  const auto dir = temp_dir("truncated");
  const fs::path ckpt = dir / "run.safetensors";
  ASSERT_EQ(vdnn(kRun + "--iterations 2 --save " + ckpt.string()).exit_code, 0);
  fs::resize_file(ckpt, fs::file_size(ckpt) / 2);
  expect_user_error(kRun + "--iterations 4 --resume " + ckpt.string(), "run.safetensors");
}

}  // namespace test_cli_faults
}  // namespace vdnn::test
