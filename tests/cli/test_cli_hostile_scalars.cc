// Hostile scalars on every numeric flag of every `vdnn` subcommand (issue 15): each value either
// runs (and then it was a value the flag can hold exactly) or gives one clear error naming the flag;
// never a signal, never a hang, never a run on a saturated value. kNumericFlags is the one table of
// those flags; NumericFlagTableMatchesHelp keeps it complete against each command's --help.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/cli_run.h"

namespace test_cli_hostile_scalars {

namespace fs = std::filesystem;

using vdnn::test::CliRun;
using vdnn::test::temp_dir;
using vdnn::test::vdnn;

// Every numeric flag: the typed ones (INT, UINT, FLOAT in --help) and the text ones that hold a
// number (sizes, link figures, shapes). Keep in step with the commands; the help test checks it.
const std::map<std::string, std::vector<std::string>> kNumericFlags = {
    {"train",
     {"--epochs",
      "--iterations",
      "--batch",
      "--lr",
      "--lr-step-epochs",
      "--lr-gamma",
      "--momentum",
      "--weight-decay",
      "--beta1",
      "--beta2",
      "--eps",
      "--clip-grad-norm",
      "--warmup-steps",
      "--min-lr",
      "--seed",
      "--threads",
      "--input",
      "--classes",
      "--synthetic-samples",
      "--device-memory",
      "--link-bandwidth",
      "--link-latency",
      "--checkpoint-every",
      "--collective-timeout",
      "--bucket-size",
      "--conv-sub-batches",
      "--data-threads",
      "--mean",
      "--std",
      "--vocab"}},
    {"plan",
     {"--batch", "--input", "--classes", "--device-memory", "--repeats", "--link-bandwidth", "--link-latency",
      "--sweep-steps", "--ranks", "--bucket-size", "--batches"}},
    {"profile",
     {"--batch", "--input", "--classes", "--repeats", "--link-bandwidth", "--link-latency", "--steps",
      "--device-memory"}},
    {"infer",
     {"--batch", "--input", "--classes", "--synthetic-samples", "--seed", "--threads", "--device-memory", "--repeat",
      "--top-k", "--mean", "--std", "--vocab"}},
    {"load",
     {"--batch", "--data-threads", "--epochs", "--batches", "--seed", "--synthetic-samples", "--mean", "--std",
      "--vocab"}},
};

// What makes a flag apply (tools/flag_rules.h), so that a run checks its value rather than refusing
// it where it does not apply. The flags of other kinds of data (--mean, --vocab) and of mpirun have
// none here: CLI11 checks their numbers while parsing, before the rule refuses them.
const std::map<std::string, std::string> kContext = {
    {"train --lr-step-epochs", "--lr-schedule step"},
    {"train --lr-gamma", "--lr-schedule step"},
    {"train --beta1", "--optimizer adamw"},
    {"train --beta2", "--optimizer adamw"},
    {"train --eps", "--optimizer adamw"},
    {"train --link-bandwidth", "--policy all"},
    {"train --link-latency", "--policy all"},
    {"train --checkpoint-every", "--save SAVE"},  // SAVE: a file in the test's folder
    {"plan --bucket-size", "--ranks 2 --network ethernet-100g"},
    {"plan --batches", "--inference"},
    {"profile --steps", "--check none"},
    {"profile --device-memory", "--check dyn"},
    {"infer --top-k", "--predictions SAVE"},
};

// Values no flag may run with: not numbers, not finite, or beyond every integer type vdnn uses.
const std::vector<std::string> kNeverValid = {
    "nan", "inf", "-inf", "-nan", "1e308", "18446744073709551616", "99999999999999999999999", "''", "12abc", "-1"};
// Values some flags hold exactly (a run may succeed, or fail for the model rather than the flag,
// e.g. --input 1 on a convolution).
const std::vector<std::string> kMaybeValid = {"0", "1e-300", "1"};

std::string run_output_name(const fs::path& dir) { return (dir / "w.safetensors").string(); }

class CliHostileScalars : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(temp_dir("hostile_scalars"));
    std::ofstream(*dir_ / "tiny.json") << R"({"name": "tiny", "input": [1, 6, 6], "classes": 3, "layers": [
      {"name": "conv", "type": "conv", "channels": 2, "kernel": 3, "pad": 1},
      {"name": "relu", "type": "relu"}, {"name": "fc", "type": "fc", "units": "classes"},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
    const CliRun r = vdnn(train_base() + "--save " + run_output_name(*dir_));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string model() { return (*dir_ / "tiny.json").string(); }
  static std::string train_base() {
    return "train --model " + model() +
           " --data synthetic --synthetic-samples 8 --batch 4 --iterations 1 --no-eval "
           "--progress none ";
  }
  // A quick, valid command line for `command`; the hostile flag comes last (a later value wins).
  static std::string base(const std::string& command) {
    if (command == "train") return train_base();
    if (command == "plan") return "plan --model " + model() + " --repeats 1 ";  // --batch: not with --batches
    if (command == "profile") return "profile --model " + model() + " --batch 4 --repeats 1 --progress none ";
    if (command == "load") return "load --model " + model() + " --data synthetic --synthetic-samples 8 --batch 4 ";
    return "infer --model " + model() + " --weights " + run_output_name(*dir_) +
           " --data synthetic --synthetic-samples 8 --batch 4 ";
  }
  static fs::path* dir_;
};

fs::path* CliHostileScalars::dir_ = nullptr;

// The flags `vdnn <command> --help` lists with a numeric type (INT, UINT, FLOAT).
std::set<std::string> typed_numeric_flags(const std::string& command) {
  const CliRun help = vdnn(command + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  std::set<std::string> flags;
  const std::regex typed(R"(^\s+(--[a-z-]+) (INT|UINT|FLOAT)\b)");
  std::istringstream lines(help.output);
  for (std::string line; std::getline(lines, line);)
    if (std::smatch m; std::regex_search(line, m, typed)) flags.insert(m[1]);
  return flags;
}

TEST_F(CliHostileScalars, NumericFlagTableMatchesHelp) {
  for (const auto& [command, flags] : kNumericFlags) {
    const std::set<std::string> typed = typed_numeric_flags(command);
    EXPECT_FALSE(typed.empty()) << command;
    for (const std::string& f : typed)
      EXPECT_NE(std::find(flags.begin(), flags.end(), f), flags.end())
          << "`vdnn " << command << "` has numeric flag " << f << ", missing from kNumericFlags";
  }
}

// `vdnn ARGS` under a 60 s timeout: a hang exits 124, a crash 128 + its signal.
CliRun run_bounded(const std::string& args) {
  FILE* pipe = popen(("timeout 60 " + std::string(VDNN_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

// One run: a success must have used a value the flag holds exactly; a failure is one clear error
// that names the flag (CLI11's own line, or vdnn's "error: --flag ..."). `timeout` turns a hang into
// exit 124.
void check_run(const std::string& command, const std::string& args, const std::string& flag, const std::string& value,
               bool may_succeed) {
  const CliRun r = run_bounded(args + " " + flag + " " + value);
  const std::string what = "vdnn " + command + " " + flag + " " + value + "\n" + r.output;
  EXPECT_LT(r.exit_code, 124) << "a crash or a hang: " << what;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << what;
  if (r.exit_code == 0) {
    EXPECT_TRUE(may_succeed) << "ran with a value it cannot hold: " << what;
    return;
  }
  // The error: vdnn's "error: ..." line or CLI11's "--flag: ..." line, exactly one (lines a run
  // printed before it, such as the model summary, may come first).
  std::vector<std::string> errors;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("error: ", 0) == 0 || line.rfind("--", 0) == 0) errors.push_back(line);
  ASSERT_EQ(errors.size(), 1u) << "not one error line: " << what;
  if (!may_succeed) EXPECT_NE(errors[0].find(flag), std::string::npos) << "the error does not name the flag: " << what;
}

TEST_F(CliHostileScalars, EveryNumericFlagRefusesOrRunsNeverCrashesNorSaturates) {
  // All never-valid values on every flag would be ~400 runs; a fixed-seed sample keeps the test
  // under a minute and the same on every run (VDNN_HOSTILE_SEED picks another sample).
  const char* env = std::getenv("VDNN_HOSTILE_SEED");
  std::mt19937 rng(env ? static_cast<unsigned>(std::stoul(env)) : 15u);
  const auto start = std::chrono::steady_clock::now();
  int runs = 0;
  for (const auto& [command, flags] : kNumericFlags)
    for (const std::string& flag : flags) {
      std::vector<std::string> never = kNeverValid;
      std::shuffle(never.begin(), never.end(), rng);
      never.resize(4);
      std::string args = base(command);
      if (auto c = kContext.find(command + " " + flag); c != kContext.end())
        args += std::regex_replace(c->second, std::regex("SAVE"), (*dir_ / "out").string()) + " ";
      for (const std::string& v : never) check_run(command, args, flag, v, false), ++runs;
      const std::string& maybe = kMaybeValid[rng() % kMaybeValid.size()];
      check_run(command, args, flag, maybe, true), ++runs;
    }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // No bound on the total: each run is bounded (run_bounded: a hang is exit 124, a failure above),
  // and the total is a timing, which CI's loaded machine pushed past 120 s once (137 s).
  std::printf("hostile scalars: %d runs in %.1f s\n", runs, seconds);
}

// The findings one by one, each with the message a user reads.
TEST_F(CliHostileScalars, SeedsOutsideUint64AreRefusedNotSaturated) {
  for (const char* seed : {"-1", "18446744073709551616"}) {
    const CliRun r = vdnn(train_base() + "--seed " + seed);
    EXPECT_NE(r.exit_code, 0) << r.output;  // was: both ran as seed 18446744073709551615
    EXPECT_NE(
        r.output.find(std::string("--seed: '") + seed + "' is not a decimal integer in [0, 18446744073709551615]"),
        std::string::npos)
        << r.output;
  }
  const CliRun top = vdnn(train_base() + "--seed 18446744073709551615");
  EXPECT_EQ(top.exit_code, 0) << top.output;
}

// The re-probe: CLI11 converts integers with base 0, so `--batch 010` planned batch 8 and `--seed
// 010` trained as seed 8; an integer is now read in decimal, and text that is no number says so
// before any range does.
TEST_F(CliHostileScalars, IntegersAreDecimalAndTextThatIsNoNumberSaysSo) {
  const CliRun r = vdnn("plan --model fmnist_cnn --device titan-x-maxwell --policy none --json --batch 010");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["batch"], 10);
  auto refused = [](const std::string& args, const std::string& message) {  // CLI11's parse error, as for --seed
    const CliRun r = vdnn(args);
    EXPECT_NE(r.exit_code, 0) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << message << " not in: " << r.output;
  };
  refused("plan --model fmnist_cnn --device titan-x-maxwell --batch 0x8", "--batch: '0x8' is not a decimal integer");
  for (const char* v : {"1_0", "1e", "0.05f", "50%"})
    refused(train_base() + "--lr " + v, std::string("--lr: '") + v + "' is not a number");
}

TEST_F(CliHostileScalars, NanAndInfAreRefusedOnEveryFloatFlag) {
  for (const char* flag : {"--lr", "--momentum", "--weight-decay", "--lr-gamma"})
    for (const char* v : {"nan", "-nan", "inf"}) {
      const CliRun r = vdnn(train_base() + flag + " " + v);
      EXPECT_NE(r.exit_code, 0) << flag << " " << v << "\n" << r.output;  // was: --lr nan trained
      EXPECT_EQ(r.output.rfind(std::string(flag) + ":", 0), 0u) << r.output;
    }
  const CliRun r = vdnn(train_base() + "--lr nan");
  EXPECT_NE(r.output.find("'nan' is not a finite number"), std::string::npos) << r.output;
}

TEST_F(CliHostileScalars, ThreadsAboveTheHardwareThreadsAreRefused) {
  const std::string most = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  const CliRun r = vdnn(train_base() + "--threads " + std::to_string(std::stoi(most) + 1));
  EXPECT_NE(r.exit_code, 0) << r.output;  // was: up to 1024 accepted
  EXPECT_NE(r.output.find("is not a thread count from 1 to " + most + ", the hardware threads"), std::string::npos)
      << r.output;
  EXPECT_EQ(vdnn(train_base() + "--threads " + most).exit_code, 0);
  EXPECT_NE(vdnn(base("infer") + "--threads 1024").output.find("--threads: '1024' is not a thread count"),
            std::string::npos);
}

TEST_F(CliHostileScalars, LinkSettingsThatNeverFinishAStepAreRefused) {
  // Were: accepted, and the run never ended.
  vdnn::test::expect_user_error(train_base() + "--policy all --link-bandwidth 1e-9",
                                "--link-bandwidth: 1e-9 GB/s is too slow to finish a step; give 0 (unlimited) or at "
                                "least 0.001 GB/s");
  vdnn::test::expect_user_error(train_base() + "--policy all --link-latency 1000s",
                                "--link-latency: 1000s per copy is too long to finish a step; give 0 to 1s");
  vdnn::test::expect_user_error(base("profile") + "--link-latency 2s", "--link-latency: 2s per copy is too long");
  EXPECT_EQ(vdnn(train_base() + "--policy all --link-bandwidth 0.001 --link-latency 1ms").exit_code, 0);
}

TEST_F(CliHostileScalars, CpuBudgetAboveAvailableHostMemoryIsRefused) {
  // 1 TiB is above the available memory of any machine this runs on (was: taken, or the OOM killer).
  const CliRun r = vdnn(train_base() + "--device-memory 1TiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: --device-memory 1.00 TiB: the cpu backend takes the budget from host memory at "
                          "once, and only "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("is available (MemAvailable in /proc/meminfo)"), std::string::npos) << r.output;
  EXPECT_NE(vdnn("train --help").output.find("real host memory, taken at once"), std::string::npos);
}

}  // namespace test_cli_hostile_scalars
