// data/augment.h and the loader's augmentation: a padded random crop shows the image shifted by
// an offset in -pad..pad with the zero pixel's value outside, a flip mirrors it, both are drawn
// evenly; a BatchLoader with augmentation gives the same batches for the same seed and epoch and
// other ones in another epoch; --augment trains reproducibly and names itself when wrong.
#include <gtest/gtest.h>

#include <set>

#include "cli/cli_run.h"
#include "data/augment.h"
#include "data/batch_loader.h"
#include "data/synthetic.h"
#include "error_of.h"

namespace vdnn {
namespace test_augment {

constexpr int64_t kC = 2, kH = 6, kW = 7;

std::vector<float> ramp() {  // every value distinct
  std::vector<float> v(kC * kH * kW);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.5f;
  return v;
}

// The (top, left, flipped) that makes `out` from `src`, or nothing.
bool explain(const std::vector<float>& src, const std::vector<float>& out, const std::vector<float>& fill, int pad,
             int* top_out, bool* flipped_out) {
  for (int flipped = 0; flipped < 2; ++flipped)
    for (int top = -pad; top <= pad; ++top)
      for (int left = -pad; left <= pad; ++left) {
        bool same = true;
        for (int64_t c = 0; c < kC && same; ++c)
          for (int64_t y = 0; y < kH && same; ++y)
            for (int64_t x = 0; x < kW && same; ++x) {
              const int64_t sy = y + top, sx = (flipped ? kW - 1 - x : x) + left;
              const float want = sy >= 0 && sy < kH && sx >= 0 && sx < kW ? src[(c * kH + sy) * kW + sx] : fill[c];
              same = out[(c * kH + y) * kW + x] == want;
            }
        if (same) {
          *top_out = top;
          *flipped_out = flipped;
          return true;
        }
      }
  return false;
}

TEST(Augment, ACropIsTheImageShiftedWithinThePaddingAndAFlipMirrorsIt) {
  const std::vector<float> src = ramp(), fill{-1.5f, -2.5f};
  std::vector<float> out(src.size());
  Rng rng(7, 1);
  const Augmentation cifar = parse_augmentation("cifar", "--augment");
  ASSERT_EQ(cifar.pad, 4);
  ASSERT_TRUE(cifar.flip);
  std::set<int> tops;
  int flips = 0;
  const int draws = 400;
  for (int i = 0; i < draws; ++i) {
    augment_sample(src.data(), out.data(), kC, kH, kW, fill, cifar, rng);
    int top = 0;
    bool flipped = false;
    ASSERT_TRUE(explain(src, out, fill, 4, &top, &flipped)) << "draw " << i << " is no shifted, padded, flipped image";
    tops.insert(top);
    flips += flipped;
  }
  EXPECT_EQ(tops.size(), 9u);  // every offset of -4..4 drawn
  EXPECT_GT(flips, draws / 2 - 60);
  EXPECT_LT(flips, draws / 2 + 60);
  // none: the image as it is.
  augment_sample(src.data(), out.data(), kC, kH, kW, fill, parse_augmentation("none", "--augment"), rng);
  EXPECT_EQ(out, src);
  const std::string e = test::error_of([] { parse_augmentation("crop", "--augment"); });
  EXPECT_NE(e.find("--augment 'crop': expected none, flip"), std::string::npos) << e;
}

TEST(Augment, TheLoaderAugmentsTheSameWayForTheSameSeedAndEpochAndOtherwiseInAnother) {
  Dataset d = make_synthetic(32, 3, 8, 8, 4, 5);
  d.zero_pixel = {-1, -2, -3};
  auto epoch_batches = [&](uint64_t seed, int epoch) {
    BatchLoader loader(d, 8, /*shuffle=*/true, seed, {}, parse_augmentation("cifar", "--augment"));
    loader.start_epoch(epoch);
    std::vector<float> x(8 * loader.sample_floats()), all;
    std::vector<int32_t> y(8);
    int64_t n = 0;
    while (loader.next(x.data(), y.data(), &n)) all.insert(all.end(), x.begin(), x.end());
    return all;
  };
  const std::vector<float> a = epoch_batches(3, 0);
  EXPECT_EQ(epoch_batches(3, 0), a);
  EXPECT_NE(epoch_batches(3, 1), a);
  EXPECT_NE(epoch_batches(4, 0), a);
  // Without augmentation the loader hands out the samples as they are.
  BatchLoader plain(d, 8, /*shuffle=*/false, 3);
  plain.start_epoch(0);
  std::vector<float> x(8 * plain.sample_floats());
  std::vector<int32_t> y(8);
  int64_t n = 0;
  ASSERT_TRUE(plain.next(x.data(), y.data(), &n));
  EXPECT_TRUE(std::equal(x.begin(), x.end(), d.images.begin()));
}

TEST(Augment, TrainingWithAugmentationIsReproducibleAndABadValueNamesTheFlag) {
  const std::string args =
      "train --data synthetic --synthetic-samples 64 --batch 16 --iterations 3 --no-eval "
      "--progress none --augment cifar";
  const test::CliRun a = test::vdnn(args), b = test::vdnn(args), plain = test::vdnn(args + " --augment none");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto sha = [](const std::string& out) { return out.substr(out.find("weights_sha256"), 15 + 64); };
  EXPECT_EQ(sha(a.output), sha(b.output));
  EXPECT_NE(sha(a.output), sha(plain.output));
  const test::CliRun bad = test::vdnn("train --data synthetic --iterations 1 --augment mixup");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("--augment 'mixup': expected none, flip"), std::string::npos) << bad.output;
}

}  // namespace test_augment
}  // namespace vdnn
