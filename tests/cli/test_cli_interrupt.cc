// Ctrl-C during `vdnn train`: the run stops after the step in flight with one line that names the
// step the --save checkpoint holds and the --resume that continues from it, exits 130, and leaves
// no temporary file beside the checkpoint (checkpoints are written every step here, so a signal
// often lands mid-write). A second Ctrl-C exits at once, also without leaving one.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "util/hostile_paths.h"

namespace vdnn::test {
namespace test_cli_interrupt {

namespace fs = std::filesystem;

struct Interrupted {
  int exit_code = -1;
  std::string output;
};

std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `vdnn <args>` (output to `log`), waits until `ready()`, sends SIGINT `signals` times, and
// waits for it to end.
Interrupted interrupt_run(const std::string& args, const std::function<bool()>& ready, int signals,
                          const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = "exec " + std::string(VDNN_BINARY) + " " + args + " > " + log.string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  Interrupted r;
  if (pid < 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a few more steps and checkpoints
  for (int i = 0; i < signals; ++i) kill(pid, SIGINT);
  int status = 0;
  for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; ++waited) {
    if (waited == 1000) kill(pid, SIGKILL);  // 10 s: it ignored the signal
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.output = file_text(log);
  fs::remove(log);
  return r;
}

const std::string kTrain =
    "train --data synthetic --synthetic-samples 256 --batch 8 --iterations 1000000 --no-eval --progress none "
    "--model ";

fs::path write_tiny_model(const fs::path& dir) {
  const fs::path p = dir / "tiny.json";
  std::ofstream(p) << R"({"name": "tiny", "input": [1, 4, 4], "classes": 2, "layers": [
      {"name": "fc1", "type": "fc", "units": 2}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  return p;
}

TEST(Interrupt, CtrlCStopsBetweenStepsAndSaysHowToResume) {
  const fs::path dir = temp_dir("sigint");
  const fs::path ckpt = dir / "ckpt" / "run.safetensors";
  fs::create_directories(ckpt.parent_path());
  const std::string args = kTrain + write_tiny_model(dir).string() + " --checkpoint-every 1 --save " + ckpt.string();
  const Interrupted r = interrupt_run(
      args, [&] { return fs::exists(ckpt); }, 1, dir / "log");
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_EQ(temp_files_under(ckpt.parent_path()), std::vector<std::string>{}) << r.output;
  std::smatch m;
  const std::regex line("interrupted \\(Ctrl-C\\) after step (\\d+) of 1000000; the checkpoint " + ckpt.string() +
                        " holds step (\\d+): `vdnn train \\.\\.\\. --resume " + ckpt.string() + "`");
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
  EXPECT_EQ(m[1], m[2]) << "with a checkpoint every step, the last step done is the one saved";
  // The hint is true: the checkpoint holds that step, and --resume continues from it.
  const CliRun resumed = vdnn(kTrain + (dir / "tiny.json").string() + " --iterations " +
                              std::to_string(std::stoll(m[2]) + 1) + " --resume " + ckpt.string());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming " + ckpt.string() + " at step " + m[2].str()), std::string::npos)
      << resumed.output;
  fs::remove_all(dir);
}

TEST(Interrupt, WithoutSaveItSaysThereIsNothingToResume) {
  const fs::path dir = temp_dir("sigint_nosave");
  const fs::path report = dir / "run.json";
  // Training is under way once the first epoch's line is out (256 samples: 32 steps an epoch).
  const std::string args = kTrain + write_tiny_model(dir).string() + " --report " + report.string();
  const Interrupted r = interrupt_run(
      args, [&] { return file_text(dir / "log").find("epoch ") != std::string::npos; }, 1, dir / "log");
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_NE(r.output.find("no --save, so nothing to resume from"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(report));
  EXPECT_EQ(temp_files_under(dir), std::vector<std::string>{});
  fs::remove_all(dir);
}

TEST(Interrupt, ASecondCtrlCExitsAtOnceAndLeavesNoTemporaryFile) {
  const fs::path dir = temp_dir("sigint_twice");
  const fs::path ckpt = dir / "ckpt" / "run.safetensors";
  fs::create_directories(ckpt.parent_path());
  const std::string args = kTrain + write_tiny_model(dir).string() + " --checkpoint-every 1 --save " + ckpt.string();
  const Interrupted r = interrupt_run(
      args, [&] { return fs::exists(ckpt); }, 2, dir / "log");
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_NE(r.output.find("interrupted"), std::string::npos) << r.output;
  EXPECT_EQ(temp_files_under(ckpt.parent_path()), std::vector<std::string>{}) << r.output;
  fs::remove_all(dir);
}

}  // namespace test_cli_interrupt
}  // namespace vdnn::test
