// Hostile files given to `vdnn` (issue 15): a device as --costs, a model file with one class, and
// weights that are NaN, Inf or a negative batch-norm variance, which `vdnn infer` evaluated to a
// plausible loss (or -nan) while --resume refused them. Each is one clear error line now.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "cli/cli_run.h"
#include "io/safetensors.h"
#include "runtime/checkpoint.h"

namespace test_cli_hostile_files {

namespace fs = std::filesystem;

using vdnn::test::CliRun;
using vdnn::test::expect_user_error;
using vdnn::test::temp_dir;
using vdnn::test::vdnn;

const std::string kTrain = "train --data synthetic --synthetic-samples 64 --batch 16 --progress none ";

// Exit 1 and one error line, the last, containing `fragment` (train prints its summary first).
void expect_error_line(const std::string& args, const std::string& fragment) {
  const CliRun r = vdnn(args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
  const size_t at = r.output.find("error: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_TRUE(at == 0 || r.output[at - 1] == '\n') << r.output;
  EXPECT_EQ(r.output.find('\n', at), r.output.size() - 1) << "not the last line: " << r.output;
  EXPECT_NE(r.output.find(fragment, at), std::string::npos) << fragment << " not in: " << r.output;
}

class CliHostileFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("hostile_files"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(CliHostileFiles, CostsFromADeviceAreRefusedNotReadForever) {
  expect_user_error("plan --model fmnist_cnn --batch 4 --costs /dev/zero",
                    "/dev/zero: is a character device, not a regular file");
  expect_error_line(kTrain + "--policy dyn --device-memory 1GiB --costs /dev/zero",
                    "/dev/zero: is a character device, not a regular file");
}

TEST_F(CliHostileFiles, ModelFileWithOneClassIsRefusedAsTheFlagIs) {
  const std::string layers = R"("layers": [{"name": "fc", "type": "fc", "units": "classes"},
                                           {"name": "loss", "type": "softmax_cross_entropy"}]})";
  std::ofstream(path("one.json")) << R"({"input": [4], "classes": 1, )" + layers;
  // Was: trained to loss 0 and accuracy 1.0 while --classes 1 was refused.
  expect_user_error(kTrain + "--iterations 1 --model " + path("one.json"),
                    path("one.json") + ": field 'classes': expected an integer in [2, 1048576] (as --classes), got 1");
  const CliRun flag = vdnn(kTrain + "--iterations 1 --classes 1");
  EXPECT_NE(flag.exit_code, 0);
  EXPECT_NE(flag.output.find("--classes: Value 1 not in range 2 to 1048576"), std::string::npos) << flag.output;
  // --input and the file's "input" share their bound too.
  std::ofstream(path("wide.json")) << R"({"input": [4294967296], "classes": 2, )" + layers;
  expect_user_error("plan --model " + path("wide.json"),
                    "field 'input': expected [C, H, W] or [K] of integers in [1, 2147483648]");
  expect_user_error("plan --model fmnist_cnn --input 4294967296", "--input: expected CxHxW or K");
}

// A checkpoint of fmnist_cnn (it has batch norms) with one value replaced, checked by both
// `vdnn infer` and `--resume`.
TEST_F(CliHostileFiles, InferAndResumeRefuseTheSameBadWeights) {
  const CliRun saved = vdnn(kTrain + "--iterations 2 --no-eval --save " + path("w.safetensors"));
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  const vdnn::SafeTensors good = vdnn::read_weights_file(path("w.safetensors"));
  struct Damage {
    std::string tensor;
    float value;
    std::string message;
  };
  const std::vector<Damage> damages = {
      {"conv1.weight", std::numeric_limits<float>::quiet_NaN(),
       "tensor 'conv1.weight' element 0 is nan (expected finite"},
      {"fc2.weight", std::numeric_limits<float>::infinity(), "tensor 'fc2.weight' element 0 is inf (expected finite"},
      {"bn1.running_var", -1.0f,
       "tensor 'bn1.running_var' element 0 is -1 (a batch-norm running variance must be >= 0)"},
  };
  for (const Damage& d : damages) {
    vdnn::SafeTensors bad = good;
    auto t = std::find_if(bad.tensors.begin(), bad.tensors.end(), [&](const auto& x) { return x.name == d.tensor; });
    ASSERT_NE(t, bad.tensors.end()) << d.tensor;
    t->data[0] = d.value;
    bad.metadata.erase("weights_sha256");  // so the value check, not the hash, must catch it
    const std::string file = path("bad.safetensors");
    vdnn::write_safetensors(file, bad);
    // Was: exit 0 with a plausible loss and accuracy (or "-nan").
    expect_user_error("infer --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 16 --weights " + file,
                      file + ": " + d.message);
    expect_error_line(kTrain + "--iterations 3 --no-eval --resume " + file, file + ": " + d.message);
  }
}

}  // namespace test_cli_hostile_files
