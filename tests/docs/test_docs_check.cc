// scripts/check_docs.sh, the CI check that the docs' marked examples run and their links lead
// somewhere, fails on a broken example or link and passes once they are mended: run on a copy of
// the script under a temporary root holding a README and one doc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_docs_check {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A root with scripts/check_docs.sh, a README whose checked block is `readme_block`, and
// docs/guide.md linking to `link`.
fs::path docs_root(const std::string& readme_block, const std::string& link) {
  const fs::path root = temp_dir("docs_check");
  fs::create_directories(root / "scripts");
  fs::copy_file(fs::path(VDNN_SOURCE_DIR) / "scripts/check_docs.sh", root / "scripts/check_docs.sh");
  write(root / "README.md", "# t\n\n```sh check\n" + readme_block + "\n```\n\n```sh\nnot checked: exit 1\n```\n");
  write(root / "docs/guide.md", "# Guide\n\n## Train\n\nSee [the readme](../README.md) and [this](" + link +
                                    ").\n\n```python check\nimport sys\nassert sys.version_info >= (3,)\n```\n");
  return root;
}

CliRun check(const fs::path& root) {
  const std::string build = fs::path(VDNN_BINARY).parent_path().string();
  return run_command("bash " + (root / "scripts/check_docs.sh").string() + " " + build);
}

TEST(DocsCheck, FailsOnABrokenExampleOrLinkAndPassesOnceMended) {
  const fs::path broken = docs_root("vdnn train --policy sometimes --iterations 1", "no-such-file.md");
  const CliRun bad = check(broken);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("README.md:3: FAILED"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("--policy: sometimes not in"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("docs/guide.md:5: link to no-such-file.md"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("2 example(s), 1 failed; links FAILED"), std::string::npos) << bad.output;

  const fs::path mended = docs_root("vdnn models | grep -q fmnist_cnn", "guide.md#train");
  const CliRun good = check(mended);
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find("2 example(s), 0 failed; links ok"), std::string::npos) << good.output;
  fs::remove_all(broken);
  fs::remove_all(mended);
}

}  // namespace test_docs_check
}  // namespace vdnn::test
