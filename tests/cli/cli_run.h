// tests/cli/cli_run.h — runs the `vdnn` binary and checks what a user sees.
//
//   CliRun r = vdnn("plan --model vgg16 --batch 256 --device titan-x-maxwell");
//   EXPECT_EQ(r.exit_code, 0) << r.output;
//   expect_user_error("train --policy dyn", "needs --device-memory");   // one "error:" line, exit 1
//   nlohmann::json report = read_json_file(dir / "r.json");
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "io/json_text.h"
#include "util/text_file.h"

namespace vdnn::test {

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Any shell command, its stderr with its stdout.
inline CliRun run_command(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

inline CliRun vdnn(const std::string& args) { return run_command(std::string(VDNN_BINARY) + " " + args); }

// A JSON file vdnn wrote, read as vdnn reads JSON (io/json_text.h): an error names the file.
inline nlohmann::json read_json_file(const std::filesystem::path& file) {
  return parse_json_text(read_text_file(file.string()), file.string());
}

// The folders temp_dir made, removed with everything in them when the test process exits, also
// after a failed ASSERT returned early (which left ~20 folders, some of 6 MiB, in /tmp per suite).
// Only the process that made them removes them (a forked child that exits does not);
// VDNN_KEEP_TEST_DIRS=1 keeps them to look at.
struct TempDirs {
  const pid_t owner = getpid();
  std::mutex mu;
  std::vector<std::filesystem::path> paths;
  ~TempDirs() {
    const char* keep = std::getenv("VDNN_KEEP_TEST_DIRS");
    if (getpid() != owner || (keep && std::string(keep) == "1")) return;
    std::error_code ignored;
    for (const auto& p : paths) std::filesystem::remove_all(p, ignored);
  }
};

inline TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

// A fresh, empty folder under the system's temporary directory, removed when the process exits.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("vdnn_cli_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  TempDirs& dirs = temp_dirs();
  const std::lock_guard<std::mutex> lock(dirs.mu);
  dirs.paths.push_back(p);
  return p;
}

// A user error: exit code 1 and exactly one line starting "error:" that contains `fragment`.
inline void expect_user_error(const std::string& args, const std::string& fragment) {
  const CliRun r = vdnn(args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << fragment << " not in: " << r.output;
}

}  // namespace vdnn::test
