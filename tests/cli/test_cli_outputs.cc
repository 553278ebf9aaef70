// Every output flag of every subcommand against every hostile path kind (util/hostile_paths.h): a
// character device and a FIFO are written through and keep their kind, a symbolic link is written
// through and stays a link, a full disk fails with one error line (no "saved"), a folder and a
// missing folder fail with one line naming the flag before any work. Never a crash, never a
// temporary file left behind. kOutputFlags is the one list of output flags; a test checks it
// against each command's --help, so a new flag that writes a file cannot be left out.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "cli/cli_run.h"
#include "util/hostile_paths.h"

namespace vdnn::test {
namespace test_cli_outputs {

namespace fs = std::filesystem;

// Every flag that names a file a command writes: a --help description starting "write".
const std::map<std::string, std::vector<std::string>> kOutputFlags = {
    {"train", {"--report", "--trace", "--save", "--save-weights"}},
    {"plan", {"--trace", "--svg", "--svg-memory", "--sweep-svg", "--scaling-svg"}},
    {"profile", {"--save"}},
    {"infer", {"--logits", "--predictions"}},
    {"export", {"--onnx"}},
    {"models", {}},
};

// A run of `command` that finishes in well under a second with the tiny model at `model`.
std::string quick_run(const std::string& command, const fs::path& model) {
  const std::string m = " --model " + model.string();
  if (command == "train")
    return "train --data synthetic --synthetic-samples 8 --batch 4 --iterations 1 --no-eval --progress none" + m;
  if (command == "plan")
    return "plan --batch 2 --device titan-x-maxwell --ranks 2 --network hdr-infiniband" + m;  // --scaling-svg
  if (command == "profile") return "profile --batch 2 --repeats 1 --progress none" + m;
  if (command == "export") return "export" + m;  // the seeded weights
  ADD_FAILURE() << "no quick run for " << command;
  return command;
}

fs::path write_tiny_model(const fs::path& dir) {
  const fs::path p = dir / "tiny.json";
  std::ofstream(p) << R"({"name": "tiny", "input": [1, 4, 4], "classes": 2, "layers": [
      {"name": "conv1", "type": "conv", "channels": 2, "kernel": 3, "pad": 1},
      {"name": "fc1", "type": "fc", "units": 2},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  return p;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

TEST(OutputFlags, TheTableListsEveryFlagWhoseHelpSaysItWritesAFile) {
  const std::regex option(R"(^\s+(--[a-z][a-z-]*)\S*(?: [A-Z\[]\S*)*\s{2,}(.*)$)");  // type, REQUIRED, [default]
  for (const auto& [command, table] : kOutputFlags) {
    const CliRun help = vdnn(command + " --help");
    ASSERT_EQ(help.exit_code, 0) << help.output;
    std::vector<std::string> writes;
    std::istringstream in(help.output);
    std::smatch m;
    for (std::string line; std::getline(in, line);)
      if (std::regex_match(line, m, option) && m[2].str().rfind("write", 0) == 0) writes.push_back(m[1]);
    EXPECT_EQ(writes, table) << "`vdnn " << command << " --help` lists these output flags; update kOutputFlags:\n"
                             << help.output;
  }
}

class OutputPaths : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = temp_dir("outputs_" + GetParam());
    model_ = write_tiny_model(dir_);
  }
  void TearDown() override {
    EXPECT_EQ(temp_files_under(dir_), std::vector<std::string>{}) << "a temporary file was left behind";
    fs::remove_all(dir_);
  }
  const std::vector<std::string>& flags() const { return kOutputFlags.at(GetParam()); }
  fs::path dir_, model_;
};

// One run with every output flag at its own path of `kind`: all written through, all kept.
TEST_P(OutputPaths, DevicesFifosAndSymlinksAreWrittenThroughAndKeepTheirKind) {
  for (HostileKind kind : {HostileKind::kCharDevice, HostileKind::kFifo, HostileKind::kSymlink}) {
    SCOPED_TRACE(to_string(kind));
    std::vector<HostilePath> paths;
    std::string args = quick_run(GetParam(), model_);
    for (const std::string& flag : flags()) {
      paths.push_back(make_hostile_path(dir_, std::to_string(static_cast<int>(kind)) + flag.substr(2), kind));
      args += " " + flag + " " + paths.back().path.string();
    }
    std::vector<std::unique_ptr<FifoReader>> readers;
    if (kind == HostileKind::kFifo)
      for (const HostilePath& p : paths) readers.push_back(std::make_unique<FifoReader>(p.path));
    const CliRun r = vdnn(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    for (size_t i = 0; i < paths.size(); ++i) {
      EXPECT_EQ(kind_of(paths[i].path), paths[i].kind_before) << flags()[i] << " " << paths[i].path;
      if (kind == HostileKind::kFifo) EXPECT_GT(readers[i]->finish().size(), 0u) << flags()[i] << " wrote nothing";
      if (kind == HostileKind::kSymlink) {
        EXPECT_EQ(kind_of(paths[i].link_target), "file") << flags()[i];
        EXPECT_GT(fs::file_size(paths[i].link_target), 0u) << flags()[i];
      }
    }
  }
}

// Each flag alone at a path that cannot be written: one error line naming it, the path untouched.
TEST_P(OutputPaths, AFullDiskAFolderOrAMissingFolderIsOneClearError) {
  for (HostileKind kind : {HostileKind::kFullDisk, HostileKind::kFolder, HostileKind::kMissingFolder})
    for (const std::string& flag : flags()) {
      SCOPED_TRACE(std::string(to_string(kind)) + " at " + flag);
      const HostilePath p = make_hostile_path(dir_, std::to_string(static_cast<int>(kind)) + flag.substr(2), kind);
      const std::string args = quick_run(GetParam(), model_) + " " + flag + " " + p.path.string();
      const CliRun r = vdnn(args);
      EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
      const std::vector<std::string> errors = lines_starting(r.output, "error: ");
      ASSERT_EQ(errors.size(), 1u) << r.output;
      EXPECT_NE(errors[0].find(p.path.string()), std::string::npos) << errors[0];
      EXPECT_EQ(r.output.find("saved"), std::string::npos) << r.output;
      EXPECT_EQ(kind_of(p.path), p.kind_before);
      if (kind == HostileKind::kFullDisk) {
        EXPECT_NE(errors[0].find("No space left on device"), std::string::npos) << errors[0];
      } else {  // found before any work: the error is all there is
        EXPECT_EQ(r.output, errors[0] + "\n");
        EXPECT_NE(errors[0].find(flag + " " + p.path.string()), std::string::npos) << errors[0];
      }
      if (kind == HostileKind::kFolder) EXPECT_TRUE(fs::is_empty(p.path));
    }
}

INSTANTIATE_TEST_SUITE_P(Commands, OutputPaths, ::testing::Values("train", "plan", "profile", "export"),
                         [](const auto& info) { return info.param; });

TEST(OutputFlags, ABadReportPathFailsBeforeTraining) {
  const fs::path dir = temp_dir("report_first");
  const auto start = std::chrono::steady_clock::now();
  expect_user_error("train --data synthetic --iterations 1000000 --progress none --report " +
                        (dir / "no_such_folder" / "run.json").string(),
                    "--report " + (dir / "no_such_folder" / "run.json").string() + ": folder");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "the path is checked before the data is loaded and the net built";
  expect_user_error("train --data synthetic --iterations 1000000 --progress none --report " + dir.string(),
                    "is a folder");
  expect_user_error("train --data synthetic --iterations 1000000 --progress none --report " +
                        (dir / "a.json").string() + " --trace " + (dir / "a.json").string(),
                    "both name");
  fs::remove_all(dir);
}

}  // namespace test_cli_outputs
}  // namespace vdnn::test
