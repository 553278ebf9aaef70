// The data directory (vdnn/data_dir.h): from the build tree the source tree's models and profiles
// are found; $VDNN_DATA_DIR or set_data_dir() is the one place looked in when given; a data
// directory without the folder, or a name it does not hold, fails naming where it looked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_of.h"
#include "scoped_env.h"
#include "vdnn/vdnn.h"  // the public API only (load_model, load_device_profile, data_folder ...)

namespace vdnn {
namespace test_data_dir {

namespace fs = std::filesystem;
using test::error_of;
using test::ScopedEnv;

class DataDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_data_dir_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    set_data_dir("");
    fs::remove_all(dir_);
  }
  // A data directory holding one model, "tiny", copied from the shipped fmnist_cnn.
  void write_tiny_model() {
    fs::create_directories(dir_ / "models");
    fs::copy_file(fs::path(VDNN_SOURCE_DIR) / "models/fmnist_cnn.json", dir_ / "models/tiny.json");
  }
  fs::path dir_;
  ScopedEnv no_models_{"VDNN_MODELS_DIR", std::nullopt}, no_profiles_{"VDNN_PROFILES_DIR", std::nullopt};
};

TEST_F(DataDir, TheBuildTreeFindsTheSourceTree) {
  ScopedEnv env("VDNN_DATA_DIR", std::nullopt);
  EXPECT_EQ(fs::path(data_folder("models")), fs::path(VDNN_SOURCE_DIR) / "models");
  EXPECT_EQ(fs::path(profiles_dir()), fs::path(VDNN_SOURCE_DIR) / "profiles");
  EXPECT_NO_THROW(load_model("fmnist_cnn"));
  EXPECT_NO_THROW(load_device_profile("h100"));
  ASSERT_FALSE(data_dir_candidates().empty());
  EXPECT_NE(data_dir_candidates()[0].find("the source tree"), std::string::npos) << data_dir_candidates()[0];
}

TEST_F(DataDir, TheEnvironmentIsTheOnePlaceLookedIn) {
  write_tiny_model();
  ScopedEnv env("VDNN_DATA_DIR", dir_.string());
  EXPECT_EQ(model_names(), std::vector<std::string>{"tiny"});
  EXPECT_NO_THROW(load_model("tiny"));
  // fmnist_cnn is in the source tree, but not here: named with the folder looked in.
  const std::string e = error_of([] { load_model("fmnist_cnn"); });
  EXPECT_NE(e.find("model 'fmnist_cnn' is neither a file nor a known model (known: tiny; looked in " +
                   (dir_ / "models").string() + ")"),
            std::string::npos)
      << e;
  // No profiles/ here: no fallback to the source tree's, and every place looked in is named.
  const std::string p = error_of([] { load_device_profile("h100"); });
  EXPECT_NE(p.find("no data directory with a profiles/ folder (looked in: " + dir_.string() +
                   " ($VDNN_DATA_DIR)); set VDNN_DATA_DIR"),
            std::string::npos)
      << p;
}

TEST_F(DataDir, AMissingDataDirectoryIsOneClearError) {
  ScopedEnv env("VDNN_DATA_DIR", (dir_ / "nowhere").string());
  const std::string e = error_of([] { load_model("fmnist_cnn"); });
  EXPECT_NE(e.find("no data directory with a models/ folder (looked in: " + (dir_ / "nowhere").string()),
            std::string::npos)
      << e;
  // A model given by its path needs no data directory.
  EXPECT_NO_THROW(load_model((fs::path(VDNN_SOURCE_DIR) / "models/fmnist_cnn.json").string()));
}

TEST_F(DataDir, SetDataDirComesBeforeTheEnvironment) {
  write_tiny_model();
  ScopedEnv env("VDNN_DATA_DIR", (dir_ / "nowhere").string());
  set_data_dir(dir_.string());
  EXPECT_EQ(model_names(), std::vector<std::string>{"tiny"});
  EXPECT_EQ(data_dir_candidates(), std::vector<std::string>{dir_.string() + " (set_data_dir)"});
  set_data_dir("");
  EXPECT_THROW(model_names(), Error);
}

}  // namespace test_data_dir
}  // namespace vdnn
