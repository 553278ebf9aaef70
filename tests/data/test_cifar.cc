// data/cifar.h: CIFAR-10 and CIFAR-100 binary batches — records, labels and the per-channel
// normalization; the folder's layout tells the format; every malformed file is refused naming it
// and what was expected; --data DIR trains on it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_run.h"
#include "data/cifar.h"
#include "data/data_source.h"
#include "error_of.h"

namespace vdnn {
namespace test_cifar {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// `n` records: record r has label(r) (CIFAR-100: coarse label r % 20 first) and pixel i of channel
// c equal to (r + 7 * c + i) % 256.
Bytes records(CifarKind kind, int n, int (*label)(int)) {
  Bytes out;
  for (int r = 0; r < n; ++r) {
    if (kind == CifarKind::kCifar100) out.push_back(static_cast<uint8_t>(r % 20));
    out.push_back(static_cast<uint8_t>(label(r)));
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 1024; ++i) out.push_back(static_cast<uint8_t>((r + 7 * c + i) % 256));
  }
  return out;
}

void write(const fs::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class Cifar : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vdnn_cifar_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A CIFAR-10 folder: five training batches of `per_batch` records and a test batch of 3.
  void cifar10(int per_batch) {
    for (int b = 1; b <= 5; ++b)
      write(dir_ / ("data_batch_" + std::to_string(b) + ".bin"),
            records(CifarKind::kCifar10, per_batch, [](int r) { return r % 10; }));
    write(dir_ / "test_batch.bin", records(CifarKind::kCifar10, 3, [](int r) { return 9 - r; }));
  }
  fs::path dir_;
};

TEST_F(Cifar, Cifar10RecordsBecomeNormalizedNchwImagesInBatchOrder) {
  cifar10(4);
  const Dataset train = load_cifar(dir_.string(), true), test = load_cifar(dir_.string(), false);
  EXPECT_EQ(train.count, 20);
  EXPECT_EQ(train.name, "cifar-10-train");
  EXPECT_EQ(train.channels, 3);
  EXPECT_EQ(train.height, 32);
  EXPECT_EQ(train.classes, 10);
  ASSERT_EQ(train.images.size(), 20u * 3072);
  EXPECT_EQ(train.labels[6], 2);  // batch 2's record 2
  for (int c = 0; c < 3; ++c)
    for (int i : {0, 31, 32, 1023}) {
      const int record = 5;  // record 1 of data_batch_2
      const float pixel = static_cast<float>((1 + 7 * c + i) % 256);
      EXPECT_FLOAT_EQ(train.images[record * 3072 + c * 1024 + i], (pixel / 255.0f - kCifar10Mean[c]) / kCifar10Std[c])
          << "channel " << c << ", pixel " << i;
    }
  EXPECT_EQ(test.count, 3);
  EXPECT_EQ(test.labels, (std::vector<int32_t>{9, 8, 7}));
}

TEST_F(Cifar, Cifar100UsesTheFineLabelAndItsOwnStatistics) {
  write(dir_ / "train.bin", records(CifarKind::kCifar100, 5, [](int r) { return 95 + r; }));
  write(dir_ / "test.bin", records(CifarKind::kCifar100, 2, [](int r) { return r; }));
  ASSERT_TRUE(is_cifar_folder(dir_.string()));
  const Dataset train = load_cifar(dir_.string(), true);
  EXPECT_EQ(train.count, 5);
  EXPECT_EQ(train.classes, 100);
  EXPECT_EQ(train.labels, (std::vector<int32_t>{95, 96, 97, 98, 99}));
  EXPECT_FLOAT_EQ(train.images[2 * 3072 + 1024 + 3],
                  (static_cast<float>(2 + 7 + 3) / 255.0f - kCifar100Mean[1]) / kCifar100Std[1]);
  EXPECT_EQ(load_cifar(dir_.string(), false).name, "cifar-100-test");
  // One of its files missing is named; files of both datasets in one folder are refused.
  fs::remove(dir_ / "test.bin");
  std::string e = test::error_of([&] { load_cifar(dir_.string(), false); });
  EXPECT_NE(e.find("test.bin does not exist (a CIFAR-100 folder holds train.bin and test.bin"), std::string::npos) << e;
  write(dir_ / "test_batch.bin", records(CifarKind::kCifar10, 1, [](int) { return 0; }));
  e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("holds both CIFAR-10 files"), std::string::npos) << e;
}

TEST_F(Cifar, MalformedFilesAreRefusedNamingTheFileAndWhatWasExpected) {
  cifar10(2);
  Bytes truncated = records(CifarKind::kCifar10, 2, [](int) { return 1; });
  truncated.resize(truncated.size() - 100);
  write(dir_ / "data_batch_3.bin", truncated);
  std::string e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("data_batch_3.bin: 6046 bytes is not a whole number of 3073-byte records"), std::string::npos) << e;
  write(dir_ / "data_batch_3.bin", records(CifarKind::kCifar10, 2, [](int r) { return r == 1 ? 10 : 0; }));
  e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("data_batch_3.bin: record 1 has label 10 (expected 0..9)"), std::string::npos) << e;
  write(dir_ / "data_batch_3.bin", {});
  e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("data_batch_3.bin: empty file"), std::string::npos) << e;
  fs::remove(dir_ / "data_batch_3.bin");
  e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("data_batch_3.bin does not exist (a CIFAR-10 folder holds data_batch_1.bin .. data_batch_5.bin"),
            std::string::npos)
      << e;
  // A CIFAR-100 coarse label out of range is refused too.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  Bytes coarse = records(CifarKind::kCifar100, 1, [](int) { return 3; });
  coarse[0] = 20;
  write(dir_ / "train.bin", coarse);
  write(dir_ / "test.bin", coarse);
  e = test::error_of([&] { load_cifar(dir_.string(), true); });
  EXPECT_NE(e.find("train.bin: record 0 has coarse label 20 (expected 0..19)"), std::string::npos) << e;
}

TEST_F(Cifar, DataFlagReadsACifarFolderAndTrainsVggCifarOnIt) {
  cifar10(8);
  const std::string args =
      "train --model vgg_cifar --data " + dir_.string() + " --batch 8 --iterations 2 --lr 0.001 --progress none";
  const test::CliRun r = test::vdnn(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("test acc"), std::string::npos) << r.output;  // evaluated on test_batch.bin
  // A model whose input is not 3x32x32 is refused naming both shapes.
  const test::CliRun wrong = test::vdnn("train --model fmnist_cnn --data " + dir_.string() + " --iterations 1");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("3x32x32"), std::string::npos) << wrong.output;
}

}  // namespace test_cifar
}  // namespace vdnn
