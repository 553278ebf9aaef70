// `vdnn train --data DIR` on image folders (data/image_folder.h): Fashion-MNIST written as a folder
// of PNG and JPEG files of several sizes trains to the IDX run's accuracy; a run is reproducible
// whatever the number of loader threads and reports how long it waited for data; unreadable
// images stop the run naming the file, or with --skip-bad-images are counted in the report.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "cli/cli_run.h"
#include "data/fashion_mnist.h"
#include "data/image_files.h"

namespace vdnn {
namespace test_cli_image_folder {

namespace fs = std::filesystem;

// A grey 28 x 28 image (0..255) scaled by nearest neighbour to side x side, as grey or RGB pixels.
std::vector<uint8_t> scaled(const uint8_t* image, int64_t side, int channels) {
  std::vector<uint8_t> px(static_cast<size_t>(side * side * channels));
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<size_t>((y * side + x) * channels + c)] = image[(y * 28 / side) * 28 + x * 28 / side];
  return px;
}

// Fashion-MNIST's split as root/<split>/<class>/<i>.png|jpg: four kinds in turn — grey PNG at 28,
// grey JPEG (quality 95) at 36, RGB PNG at 42, grey JPEG at 28.
void write_fashion_mnist_folder(const fs::path& root, bool train, const std::string& split) {
  const Dataset d = load_fashion_mnist(kFashionMnistDefaultDir, train);
  for (int c = 0; c < d.classes; ++c) fs::create_directories(root / split / ("class" + std::to_string(c)));
  std::vector<uint8_t> image(28 * 28);
  for (int64_t i = 0; i < d.count; ++i) {
    for (int64_t p = 0; p < 28 * 28; ++p)  // the byte that was normalized
      image[p] =
          static_cast<uint8_t>(std::lround((d.images[i * 784 + p] * kFashionMnistStd + kFashionMnistMean) * 255));
    const std::string file = (root / split / ("class" + std::to_string(d.labels[i])) / std::to_string(i)).string();
    switch (i % 4) {
      case 0:
        test::write_png(file + ".png", 28, 28, 1, scaled(image.data(), 28, 1));
        break;
      case 1:
        test::write_jpeg(file + ".jpg", 36, 36, 1, scaled(image.data(), 36, 1), 95);
        break;
      case 2:
        test::write_png(file + ".png", 42, 42, 3, scaled(image.data(), 42, 3));
        break;
      default:
        test::write_jpeg(file + ".jpg", 28, 28, 1, image, 95);
        break;
    }
  }
}

double test_accuracy(const std::string& output) {
  std::smatch m;
  const std::regex re("test accuracy ([0-9.]+)");
  EXPECT_TRUE(std::regex_search(output, m, re)) << output;
  return m.empty() ? -1 : std::stod(m[1]);
}

TEST(CliImageFolder, FashionMnistAsAFolderOfPngAndJpegFilesTrainsToTheIdxAccuracy) {
  const fs::path root = test::temp_dir("fmnist_folder");
  write_fashion_mnist_folder(root, true, "train");
  write_fashion_mnist_folder(root, false, "val");
  const std::string env = "VDNN_CACHE_DIR=" + (root / "cache").string() + " ";
  const test::CliRun idx = test::vdnn("train --epochs 1 --progress none");
  ASSERT_EQ(idx.exit_code, 0) << idx.output;
  const test::CliRun folder =
      test::run_command(env + VDNN_BINARY + " train --epochs 1 --progress none --data " + root.string() +
                        " --mean 0.2860 --std 0.3530 --report " + (root / "r.json").string());
  ASSERT_EQ(folder.exit_code, 0) << folder.output;
  const double a = test_accuracy(idx.output), b = test_accuracy(folder.output);
  EXPECT_NEAR(b, a, 0.01) << "IDX " << a << ", image folder " << b;
  const nlohmann::json report = test::read_json_file(root / "r.json");
  EXPECT_EQ(report["bad_images"], 0);
  EXPECT_LE(report["data_wait_seconds"].get<double>(), report["train_seconds"].get<double>());
  std::printf("Fashion-MNIST, 1 epoch: IDX test accuracy %.4f, image folder %.4f (waited %.2f s of %.2f s for data)\n",
              a, b, report["data_wait_seconds"].get<double>(), report["train_seconds"].get<double>());
  fs::remove_all(root);
}

// root/{train,val}/<class>/ with 16 small colour images per class, PNG and JPEG.
fs::path small_folder(const std::string& name) {
  const fs::path root = test::temp_dir(name);
  for (const char* split : {"train", "val"})
    for (int c = 0; c < 3; ++c) {
      const fs::path dir = root / split / ("c" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < 16; ++i) {
        std::vector<uint8_t> px = test::gradient(30 + i, 34, 3);
        for (uint8_t& p : px) p = static_cast<uint8_t>(p / 2 + 60 * c);
        if (i % 2)
          test::write_jpeg((dir / (std::to_string(i) + ".jpg")).string(), 30 + i, 34, 3, px);
        else
          test::write_png((dir / (std::to_string(i) + ".png")).string(), 30 + i, 34, 3, px);
      }
    }
  return root;
}

std::string train_on(const fs::path& root, const std::string& flags) {
  return "VDNN_CACHE_DIR=" + (root / "cache").string() + " " + VDNN_BINARY + " train --model fmnist_cnn --input " +
         "3x28x28 --batch 8 --iterations 8 --progress none --data " + root.string() + " " + flags;
}

std::string last_test_loss(const std::string& output) {
  std::string last;
  const std::regex re("test loss ([0-9.]+)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re); it != std::sregex_iterator(); ++it)
    last = (*it)[1];
  EXPECT_FALSE(last.empty()) << output;
  return last;
}

std::string sha_of(const std::string& output) {
  std::smatch m;
  const std::regex re("weights_sha256 ([0-9a-f]{64})");
  EXPECT_TRUE(std::regex_search(output, m, re)) << output;
  return m.empty() ? "" : std::string(m[1]);
}

TEST(CliImageFolder, ARunIsTheSameForAnyNumberOfLoaderThreadsAndReportsItsDataWait) {
  const fs::path root = small_folder("folder_threads_cli");
  const test::CliRun one = test::run_command(train_on(root, "--augment imagenet --data-threads 1"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const test::CliRun three =
      test::run_command(train_on(root, "--augment imagenet --data-threads 3 --report " + (root / "r.json").string() +
                                           " --save " + (root / "w.safetensors").string()));
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_EQ(sha_of(one.output), sha_of(three.output));
  EXPECT_NE(three.output.find("data: waited"), std::string::npos) << three.output;
  const nlohmann::json report = test::read_json_file(root / "r.json");
  EXPECT_EQ(report["config"]["data_threads"], 3);
  EXPECT_EQ(report["config"]["augment"], "imagenet");
  EXPECT_TRUE(report["epochs"][0].contains("data_wait_seconds"));
  // vdnn infer evaluates the weights with the recipe they were trained with (Resize by 256/224).
  const test::CliRun infer = test::run_command("VDNN_CACHE_DIR=" + (root / "cache").string() + " " + VDNN_BINARY +
                                               " infer --model fmnist_cnn --input 3x28x28 --batch 8 --data " +
                                               root.string() + " --weights " + (root / "w.safetensors").string());
  ASSERT_EQ(infer.exit_code, 0) << infer.output;
  // (infer folds the batch norms: the same loss up to rounding, 1e-5 relative in CliInfer's tests)
  const double trained = std::stod(last_test_loss(three.output)), inferred = std::stod(last_test_loss(infer.output));
  EXPECT_NEAR(inferred, trained, 2e-4) << infer.output << three.output;
  const test::CliRun plain = test::run_command(train_on(root, "--data-threads 2"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(sha_of(plain.output), sha_of(one.output));  // the crops changed the run
  fs::remove_all(root);
}

// The weights name the classes they learned (metadata "class_names"): a folder whose classes are
// as many but named otherwise was evaluated as if label 2 were the same class (issue 42).
TEST(CliImageFolder, InferRefusesAFolderOfOtherClassesThanTheWeightsLearned) {
  const fs::path root = small_folder("folder_classes_cli");
  const std::string checkpoint = (root / "c.safetensors").string(), weights = (root / "w.safetensors").string();
  const test::CliRun trained =
      test::run_command(train_on(root, "--no-eval --save " + checkpoint + " --save-weights " + weights));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  auto infer = [&](const std::string& file) {
    return test::run_command("VDNN_CACHE_DIR=" + (root / "cache").string() + " " + VDNN_BINARY +
                             " infer --model fmnist_cnn --input 3x28x28 --batch 8 --data " + root.string() +
                             " --weights " + file);
  };
  const test::CliRun same = infer(weights);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  for (const char* split : {"train", "val"}) fs::rename(root / split / "c2", root / split / "d2");
  for (const std::string& file : {checkpoint, weights}) {
    const test::CliRun other = infer(file);
    EXPECT_EQ(other.exit_code, 1) << other.output;
    EXPECT_NE(other.output.find("its classes [\"c0\",\"c1\",\"d2\"] are not those --weights " + file +
                                " was trained on, [\"c0\",\"c1\",\"c2\"]"),
              std::string::npos)
        << other.output;
  }
  fs::remove_all(root);
}

TEST(CliImageFolder, AnUnreadableImageStopsTheRunNamingItOrIsSkippedAndCounted) {
  const fs::path root = small_folder("folder_bad_cli");
  const fs::path cut = root / "train" / "c1" / "3.jpg";
  test::write_jpeg(cut.string(), 200, 160, 3, test::gradient(200, 160, 3));
  fs::resize_file(cut, fs::file_size(cut) / 2);
  test::CliRun r = test::run_command(train_on(root, ""));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: image '" + cut.string() + "': not a readable JPEG"), std::string::npos) << r.output;
  r = test::run_command(train_on(root, "--skip-bad-images --report " + (root / "r.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: image '" + cut.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 unreadable images skipped"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_json_file(root / "r.json")["bad_images"], 1);
  fs::remove_all(root / "val");
  r = test::run_command(train_on(root, "--skip-bad-images"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no val/ or test/ folder"), std::string::npos) << r.output;
  EXPECT_EQ(test::run_command(train_on(root, "--skip-bad-images --no-eval")).exit_code, 0);
  fs::create_directories(root / "test" / "c0");  // evaluation: test/, whose classes are not train/'s
  fs::create_directories(root / "test" / "c9");
  r = test::run_command(train_on(root, "--skip-bad-images"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("test/ and train/ must hold the same class folders"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lacks 2 (c1, ...) and has 1 more (c9)"), std::string::npos) << r.output;
  r = test::run_command(train_on(root, "--mean 0.5,0.5"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("2 means and 3 stds (--mean, --std)"), std::string::npos) << r.output;
  fs::remove_all(root);
}

}  // namespace test_cli_image_folder
}  // namespace vdnn
