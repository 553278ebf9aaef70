// The second hostile probe's cases at the command line (issue 42, docs/reliability.md "Second
// probe"): a model whose names are not UTF-8 leaves every output readable; a folder, FIFO or
// device where a file or folder is expected is named for what it is; flags that do not apply are
// refused, never ignored; a budget of 0 has one meaning (none: it is refused); an output path that
// cannot be created fails before training; a model with nothing to train is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "cli/cli_run.h"
#include "interop/onnx_test_model.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/svg_check.h"

namespace vdnn::test {
namespace test_cli_second_probe {

namespace fs = std::filesystem;

const std::string kTrain =
    "train --data synthetic --synthetic-samples 8 --batch 2 --iterations 2 --no-eval "
    "--progress none ";

class CliSecondProbe : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("second_probe"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// OnnxTestModel::badly_named_classifier in a file whose name is not UTF-8 either.
std::string write_badly_named_onnx(const fs::path& dir) {
  const std::string file = (dir / "m\xff.onnx").string();
  std::ofstream(file, std::ios::binary) << OnnxTestModel::badly_named_classifier().bytes();
  return file;
}

// Was: training finished, then each of these aborted with nlohmann's type_error 316 (exit 134),
// and `plan --svg` wrote a file that was not XML. Every name is written with its bytes as \xNN.
TEST_F(CliSecondProbe, AModelNamedWithBytesThatAreNotUtf8LeavesEveryOutputReadable) {
  const std::string model = write_badly_named_onnx(dir_);
  const CliRun train =
      vdnn(kTrain + "--model '" + model + "' --report " + path("r.json") + " --trace " + path("t.json") + " --save " +
           path("c.safetensors") + " --save-weights " + path("w.safetensors"));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const nlohmann::json report = read_json_file(path("r.json"));
  EXPECT_EQ(report["config"]["model"], "m\\xff");
  EXPECT_NE(report["decisions"].dump().find("f\\\\xfe.0"), std::string::npos);           // the conv layer's name
  EXPECT_NE(read_json_file(path("t.json")).dump().find("m\\\\xff"), std::string::npos);  // the trace's title
  for (const char* weights : {"c.safetensors", "w.safetensors"}) {
    const CliRun resume = vdnn(kTrain + "--model '" + model + "' --initial-weights " + path(weights));
    EXPECT_EQ(resume.exit_code, 0) << weights << "\n" << resume.output;  // its names match the model's
  }
  const CliRun profile = vdnn("profile --batch 2 --repeats 1 --progress none --json --model '" + model + "'");
  ASSERT_EQ(profile.exit_code, 0) << profile.output;
  EXPECT_NE(profile.output.find("f\\\\xfe.0"), std::string::npos) << profile.output;  // in JSON, \ is \\.
  const CliRun plan = vdnn("plan --batch 2 --device titan-x-maxwell --model '" + model + "' --svg " + path("p.svg") +
                           " --svg-memory " + path("m.svg") + " --trace " + path("pt.json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  expect_svg_renders(path("p.svg"));
  expect_svg_renders(path("m.svg"));
  EXPECT_NO_THROW(read_json_file(path("pt.json")));
  // A JSON model file named so (no "name" field: the file's stem names it) too.
  std::ofstream(path("j\xfe.json")) << R"({"input": [4], "classes": 2, "layers": [
      {"name": "fc", "type": "fc", "units": 2}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const CliRun json_model = vdnn(kTrain + "--model '" + path("j\xfe.json") + "' --report " + path("r2.json"));
  ASSERT_EQ(json_model.exit_code, 0) << json_model.output;
  EXPECT_EQ(read_json_file(path("r2.json"))["config"]["model"], "j\\xfe");
}

// Was: "not found" (or "does not exist", or a wait for a FIFO's writer that never came).
TEST_F(CliSecondProbe, AFolderFifoOrDeviceWhereAFileOrFolderIsExpectedIsNamedForWhatItIs) {
  fs::create_directories(path("folder.json"));
  ASSERT_EQ(::mkfifo(path("fifo.json").c_str(), 0600), 0);
  std::ofstream(path("plain")) << "a file";
  expect_user_error("plan --batch 2 --model fmnist_cnn --device " + path("folder.json"),
                    "device profile file '" + path("folder.json") + "' is a folder");
  expect_user_error("plan --batch 2 --model fmnist_cnn --device " + path("fifo.json"),
                    "device profile file '" + path("fifo.json") + "' is a FIFO");
  expect_user_error("plan --batch 2 --model fmnist_cnn --costs /dev/zero",
                    "--costs /dev/zero: is a character device, not a regular file");
  expect_user_error("plan --batch 2 --model fmnist_cnn --costs " + path("fifo.json"),
                    "--costs " + path("fifo.json") + ": is a FIFO, not a regular file");
  expect_user_error(kTrain + "--data /dev/zero", "data folder '/dev/zero' is a character device");
  expect_user_error(kTrain + "--data " + path("plain"), "data folder '" + path("plain") + "' is a regular file");
  expect_user_error(kTrain + "--model " + path("fifo.json"), "model '" + path("fifo.json") + "' is a FIFO");
  expect_user_error(kTrain + "--model " + path("folder.json"), "model '" + path("folder.json") + "' is a folder");
  expect_user_error(kTrain + "--model fmnist_cnn --initial-weights " + path("fifo.json"),
                    path("fifo.json") + ": is a FIFO");
  // The re-run: --val-data said "no such folder" for each of these.
  fs::create_directories(path("images/cat"));
  fs::create_directories(path("images/dog"));
  for (const auto& [val, kind] :
       std::vector<std::pair<std::string, std::string>>{{path("fifo.json"), "is a FIFO"},
                                                        {"/dev/zero", "is a character device"},
                                                        {path("plain"), "is a regular file"}})
    expect_user_error("train --model fmnist_cnn --data " + path("images") + " --val-data " + val + " --iterations 1",
                      "--val-data '" + val + "' " + kind);
}

// The re-probe: --algo-cache on a link loop aborted with an uncaught filesystem_error (exit 134)
// after seconds of measuring, and one in a missing folder failed only after them; export --onnx
// onto its own --model replaced the training model with its inference form, exit 0.
TEST_F(CliSecondProbe, AnAlgoCacheThatCannotBeAFileAndAnExportOntoItsInputAreRefusedFirst) {
  fs::create_symlink(path("loop_b"), path("loop_a"));
  fs::create_symlink(path("loop_a"), path("loop_b"));
  const std::string infer = "infer --model fmnist_cnn --data synthetic --batch 2 --conv-algo fastest --algo-cache ";
  expect_user_error(infer + path("loop_a"), "--algo-cache '" + path("loop_a") + "' cannot be examined");
  expect_user_error(infer + path("no/such/folder.json"), "--algo-cache");
  const std::string model = path("m.onnx");
  ASSERT_EQ(vdnn("export --model fmnist_cnn --onnx " + model).exit_code, 0);
  const auto before = fs::file_size(model);
  fs::create_symlink(model, path("link.onnx"));
  expect_user_error("export --model " + model + " --onnx " + path("link.onnx"), "is the file --model reads");
  EXPECT_EQ(fs::file_size(model), before);
}

TEST_F(CliSecondProbe, FlagsThatDoNotApplyAreRefusedNamingWhy) {
  expect_user_error(kTrain + "--lr-step-epochs 3", "--lr-step-epochs applies only with --lr-schedule step");
  expect_user_error(kTrain + "--lr-schedule constant --lr-gamma 0.5",
                    "--lr-gamma applies only with --lr-schedule step; it was given with --lr-schedule constant");
  EXPECT_EQ(vdnn(kTrain + "--lr-schedule step --lr-step-epochs 3 --lr-gamma 0.5").exit_code, 0);
  std::ofstream(path("c.json")) << "{}";
  expect_user_error(
      kTrain + "--policy all --costs " + path("c.json"),
      "--costs applies only with --policy dyn or auto (they plan from costs); it was given with --policy all");
}

// Was: "the default" to train and infer, "no budget" to plan (so it differed from leaving it out).
TEST_F(CliSecondProbe, ABudgetOfZeroIsRefusedByEveryCommand) {
  const std::string zero = "expected a size above 0";
  expect_user_error(kTrain + "--device-memory 0", "--device-memory 0: " + zero);
  expect_user_error(kTrain + "--policy all --host-memory 0B", "--host-memory 0: " + zero);
  expect_user_error("plan --batch 2 --model fmnist_cnn --device titan-x-maxwell --device-memory 0",
                    "--device-memory 0: " + zero);
  expect_user_error("plan --batch 2 --model fmnist_cnn --device titan-x-maxwell --host-memory 0",
                    "--host-memory 0: " + zero);
  expect_user_error("infer --model fmnist_cnn --data synthetic --batch 2 --device-memory 0",
                    "--device-memory 0: " + zero);
}

// Was: /proc passes access(W_OK) as root, so the report failed only after training.
TEST_F(CliSecondProbe, AnOutputInAFolderThatRefusesNewFilesFailsBeforeTraining) {
  const CliRun r = vdnn(kTrain + "--report /proc/version");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("error: --report /proc/version: cannot create a temporary file", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find("epoch"), std::string::npos) << r.output;
}

TEST_F(CliSecondProbe, AModelWithoutParametersIsRefusedNotTrained) {
  std::ofstream(path("relu.json")) << R"({"input": [2], "classes": 2, "layers": [
      {"name": "r", "type": "relu"}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  expect_user_error(kTrain + "--model " + path("relu.json"), "model 'relu' has no trainable parameters");
}

// Was: a file of NaN images gave every sample the same finite logits (a ReLU turns NaN into 0).
TEST_F(CliSecondProbe, InferRefusesImagesThatAreNotFinite) {
  ASSERT_EQ(vdnn(kTrain + "--model fmnist_cnn --save-weights " + path("w.safetensors")).exit_code, 0);
  const std::string infer = "infer --model fmnist_cnn --batch 2 --weights " + path("w.safetensors") + " --logits " +
                            path("y.npy") + " --images ";
  std::vector<float> x(3 * 28 * 28, 0.5f);
  write_npy(path("ok.npy"), {3, 1, 28, 28}, x);
  const CliRun ok = vdnn(infer + path("ok.npy"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  x[28 * 28 + 5] = std::numeric_limits<float>::infinity();
  write_npy(path("inf.npy"), {3, 1, 28, 28}, x);
  expect_user_error(infer + path("inf.npy"),
                    "--images " + path("inf.npy") + ": sample 1 holds inf (1 of the file's 2352");
  std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
  write_npy(path("nan.npy"), {3, 1, 28, 28}, x);
  expect_user_error(infer + path("nan.npy"), "sample 0 holds nan (2352 of the file's 2352 values are NaN or infinite)");
  // Was: finite inputs or weights that overflow float32 in the forward pass gave NaN or infinite
  // logits, exit 0. Finite weights of 3e38 in the last layer overflow in the logits themselves: an
  // overflow in the first layers (3e38 inputs) reached the logits as NaN with AVX2 kernels but gave
  // finite logits with AVX-512 ones (where the NaN is lost was not traced; a ReLU between does it),
  // so only the last layer's overflow reaches the logits on every CPU.
  SafeTensors weights = read_safetensors(path("w.safetensors"), {.accept_integer = [](const std::string&) { return true; }});
  for (SafeTensor& t : weights.tensors)
    if (t.name == "fc2.weight") std::fill(t.data.begin(), t.data.end(), 3e38f);
  weights.metadata.erase("weights_sha256");  // changed on purpose
  write_safetensors(path("huge.safetensors"), weights);
  std::fill(x.begin(), x.end(), 0.5f);
  write_npy(path("ok.npy"), {3, 1, 28, 28}, x);
  const std::string huge = "infer --model fmnist_cnn --batch 2 --weights " + path("huge.safetensors") +
                           " --logits " + path("y.npy") + " --images " + path("ok.npy");
  expect_user_error(huge, "3 sample(s) gave logits that are NaN or infinite (the first: sample 0");
}

}  // namespace test_cli_second_probe
}  // namespace vdnn::test
