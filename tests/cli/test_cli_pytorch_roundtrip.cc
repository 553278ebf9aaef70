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
namespace {

namespace fs = std::filesystem;

TEST(CliPyTorchRoundTrip, StateDictTrainsAndLoadsBackStrictly) {
  const fs::path python = fs::path(VDNN_BINARY).parent_path() / "pyenv" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run `bash scripts/python_env.sh` (it makes the "
                                  << "test environment with torch and safetensors)";
  const fs::path dir = temp_dir("pytorch_roundtrip");
  const CliRun run = run_command("timeout 120 " + python.string() + " " VDNN_SOURCE_DIR
                                 "/tests/cli/pytorch_roundtrip.py " VDNN_BINARY " " + dir.string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.substr(run.output.size() >= 3 ? run.output.size() - 3 : 0), "ok\n") << run.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vdnn::test
