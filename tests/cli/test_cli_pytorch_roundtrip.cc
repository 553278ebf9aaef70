// A PyTorch state_dict (saved with PyPI safetensors) starts `vdnn train --initial-weights`, and the
// weights vdnn writes (--save-weights; the --save checkpoint less its ":momentum" tensors) load back
// into the same torch module with load_state_dict(strict=True):
// names, shapes (grouped conv, fc after an image), dtypes and num_batches_tracked (2 + 3 steps).
// Runs tests/cli/pytorch_roundtrip.py in the test environment (build/pyenv, made by
// `bash scripts/python_env.sh`; Debian's torch + PyPI safetensors). A missing environment FAILS the
// test with the command that makes it.
#include <filesystem>
#include <string>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_pytorch_roundtrip {

namespace fs = std::filesystem;

TEST(CliPyTorchRoundTrip, StateDictTrainsAndLoadsBackStrictly) {
  const fs::path python = fs::path(VDNN_BINARY).parent_path() / "pyenv" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run `bash scripts/python_env.sh` (it makes the "
                                  << "test environment with torch and safetensors)";
  const fs::path dir = temp_dir("pytorch_roundtrip");
  const CliRun run = run_command("timeout 120 " + python.string() +
                                 " " VDNN_SOURCE_DIR "/tests/cli/pytorch_roundtrip.py " VDNN_BINARY " " + dir.string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.substr(run.output.size() >= 3 ? run.output.size() - 3 : 0), "ok\n") << run.output;
  fs::remove_all(dir);
}

// A file that is not a weights file is one line before any output; a weights file without a
// tensor the model needs fails naming the file and the tensor.
TEST(CliPyTorchRoundTrip, BadInitialWeightsNameTheFileAndTensor) {
  const std::string corpus = VDNN_SOURCE_DIR "/fuzz/corpus/safetensors/";
  const std::string train =
      "train --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 16 "
      "--iterations 1 --no-eval --initial-weights ";
  expect_user_error(
      train + corpus + "pytorch-dtypes.safetensors",
      "--initial-weights " + corpus + "pytorch-dtypes.safetensors: tensor 'n.u8': dtype U8 holds integers");
  const CliRun r = vdnn(train + corpus + "one-tensor.safetensors");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: --initial-weights " + corpus +
                          "one-tensor.safetensors: tensor 'conv1.weight' that "
                          "model 'fmnist_cnn' needs is missing\n"),
            std::string::npos)
      << r.output;
  expect_user_error("train --initial-weights a.safetensors --resume b.safetensors",
                    "--initial-weights and --resume both give the starting weights");
}

}  // namespace test_cli_pytorch_roundtrip
}  // namespace vdnn::test
