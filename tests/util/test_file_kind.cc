// Paths named for what they are (util/file_kind.h): a link whose target is gone names that target
// (an image folder's dangling link read "cannot open (No such file or directory)"), a missing path
// "does not exist", and both the check and the open say the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_file_kind {

namespace fs = std::filesystem;

std::string open_error(const std::string& path) {
  try {
    ::close(open_regular_file(path));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FileKind, ALinkWhoseTargetIsGoneNamesTheTarget) {
  const fs::path dir = fs::temp_directory_path() / ("vdnn_file_kind_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path target = dir / "gone.png", link = dir / "x.png";
  std::ofstream(target) << "x";
  fs::create_symlink(target, link);
  EXPECT_EQ(not_a_regular_file(link.string()), "");
  EXPECT_EQ(open_error(link.string()), "");
  fs::remove(target);
  const std::string why = "is a link to '" + target.string() + "', which does not exist";
  EXPECT_EQ(not_a_regular_file(link.string()), why);
  EXPECT_EQ(open_error(link.string()), link.string() + ": " + why);
  EXPECT_EQ(not_a_regular_file((dir / "none.png").string()), "does not exist");
  EXPECT_EQ(open_error((dir / "none.png").string()), (dir / "none.png").string() + ": does not exist");
  fs::remove_all(dir);
}

}  // namespace test_file_kind
}  // namespace vdnn
