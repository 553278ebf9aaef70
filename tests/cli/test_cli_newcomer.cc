// What a newcomer trips on first (issue 41): each mistake gets a working command or one line naming
// the problem and the way out. kFirstMistakes is the table: the version, a mistyped command, flag,
// model, device or data set ("did you mean"), data folders that do not exist or hold nothing vdnn
// reads. Then torchvision's ImageFolder(ROOT) layout, which trains as torchvision reads it and says
// once what it resized and converted.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "cli/cli_run.h"
#include "data/image_files.h"

namespace vdnn::test {
namespace test_cli_newcomer {

namespace fs = std::filesystem;

// CMakeLists.txt's project version: the one source of truth.
std::string project_version() {
  std::ifstream in(std::string(VDNN_SOURCE_DIR) + "/CMakeLists.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(R"(project\(vdnn VERSION ([0-9.]+))"))) << "no project version";
  return m.empty() ? "?" : m[1].str();
}

struct Mistake {
  const char* args;
  int exit_code;         // 1: a user error; CLI11's codes for what it cannot parse
  const char* fragment;  // in the one line it prints
};

const Mistake kFirstMistakes[] = {
    {"tran", 109, "error: unknown command 'tran'; did you mean 'train'?"},
    {"plann --model vgg16", 109, "did you mean 'plan'?"},
    {"train --epoch 3", 109, "error: vdnn train: unknown flag --epoch; did you mean '--epochs'?"},
    {"plan --device-mem 4GiB", 109, "unknown flag --device-mem; did you mean '--device-memory'?"},
    {"train --frobnicate", 109, "unknown flag --frobnicate (`vdnn train --help` lists its flags)"},
    {"train --model resnt18", 1, "model 'resnt18' is neither a file nor a known model (did you mean 'resnet18'?"},
    {"plan --device titan-x-maxwel", 1, "unknown device profile 'titan-x-maxwel' (did you mean 'titan-x-maxwell'?"},
    {"train --data fashion_mnist", 1, "data 'fashion_mnist': no such folder (did you mean 'fashion-mnist'?"},
    {"train --data /nonexistent/fmnist", 1, "data '/nonexistent/fmnist': no such folder"},
    {"train --data /etc/hostname", 1, "data folder '/etc/hostname' is a regular file"},
    {"train --data synthetic --val-data /tmp", 1, "--val-data is for image folders; synthetic carries its own"},
    {"profile --check auto", 1, "--check auto: auto chooses for a budget; give --device-memory"},
    {"profile --check fast", 1, "--check: 'fast' is not a policy; valid: none, conv, all, dyn, auto"},
};

TEST(CliNewcomer, VersionIsTheProjectVersion) {
  const std::string expected = "vdnn " + project_version() + "\n";
  for (const char* args : {"--version", "version"}) {
    const CliRun r = vdnn(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    EXPECT_EQ(r.output, expected) << args;
  }
}

TEST(CliNewcomer, EachFirstMistakeGetsOneLineNamingItAndTheWayOut) {
  for (const Mistake& m : kFirstMistakes) {
    const CliRun r = vdnn(m.args);
    EXPECT_EQ(r.exit_code, m.exit_code) << m.args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << m.args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << m.args << "\n" << r.output;
    EXPECT_NE(r.output.find(m.fragment), std::string::npos) << m.args << ": '" << m.fragment << "' not in\n"
                                                            << r.output;
  }
}

TEST(CliNewcomer, AFolderHoldingNoDataNamesWhatEachLayoutNeeds) {
  const fs::path dir = temp_dir("newcomer_empty");
  std::ofstream(dir / "notes.txt") << "not data\n";
  expect_user_error("train --data " + dir.string(),
                    "holds no data vdnn reads: expected CIFAR-10/100 binary batches, class folders of images "
                    "(DIR/<class>/*.jpg|png, as torchvision's ImageFolder)");
  fs::remove_all(dir);
}

// ROOT/<class>/<image>, as torchvision.datasets.ImageFolder(ROOT) takes it: 8 images of 2 classes,
// 24x24 RGB PNGs and 28x28 grey JPEGs, for a model of 1x28x28.
fs::path write_root(const std::string& name) {
  const fs::path root = temp_dir(name);
  for (const char* label : {"cat", "dog"}) {
    fs::create_directories(root / label);
    for (int i = 0; i < 4; ++i) {
      const std::string file = (root / label / std::to_string(i)).string();
      if (i % 2 == 0)
        write_png(file + ".png", 24, 24, 3, gradient(24, 24, 3));
      else
        write_jpeg(file + ".jpg", 28, 28, 1, gradient(28, 28, 1));
    }
  }
  return root;
}

constexpr const char* kTinyModel = R"({"name": "tiny", "input": [1, 28, 28], "classes": 2, "layers": [
  {"name": "conv", "type": "conv", "channels": 4, "kernel": 3, "stride": 2},
  {"name": "relu", "type": "relu"},
  {"name": "fc", "type": "fc", "units": "classes"},
  {"name": "loss", "type": "softmax_cross_entropy"}]})";

TEST(CliNewcomer, AnImageFolderRootTrainsAsTorchvisionReadsItAndSaysWhatItResizedAndConverted) {
  const fs::path root = write_root("newcomer_root"), val = write_root("newcomer_val");
  std::ofstream(root / "tiny.json") << kTinyModel;  // a file, not a class folder
  const std::string train = "VDNN_CACHE_DIR=- " + std::string(VDNN_BINARY) + " train --model " +
                            (root / "tiny.json").string() + " --batch 4 --epochs 1 --progress none --data " +
                            root.string();
  CliRun r = run_command(train);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("data: " + root.string() +
                          " holds the class folders themselves (torchvision's "
                          "ImageFolder root): all of it trains and none is held out, so no evaluation"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(8 train, 0 test)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("images: 4 of 8 resized to 28x28, 4 of 8 converted to L (grey) from RGB"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("no evaluation"), std::string::npos) << r.output;
  // --val-data: another such root of the same classes is the evaluation set; the line counts both.
  r = run_command(train + " --val-data " + val.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(8 train, 8 test)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("images: 8 of 16 resized to 28x28, 8 of 16 converted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy"), std::string::npos) << r.output;
  fs::remove_all(val / "dog");
  r = run_command(train + " --val-data " + val.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--val-data '" + val.string() + "' and the training folder must hold the same class"),
            std::string::npos)
      << r.output;
  fs::remove_all(root);
  fs::remove_all(val);
}

}  // namespace test_cli_newcomer
}  // namespace vdnn::test
