// Tests for data/: IDX reading (good and malformed files), Fashion-MNIST loading, synthetic data,
// and the prefetching BatchLoader against a sequential reference.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <thread>

#include "data/batch_loader.h"
#include "data/fashion_mnist.h"
#include "data/idx_file.h"
#include "data/synthetic.h"
#include "error_of.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_idx_and_data {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Batches = std::vector<std::vector<int64_t>>;

Bytes idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_GT(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), 0);
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

using test::error_of;

#define EXPECT_ERROR_HAS(statement, needle)                                                        \
  do {                                                                                             \
    const std::string msg_ = error_of([&] { statement; });                                         \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "wanted '" << (needle) << "' in: " << msg_; \
  } while (0)

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("vdnn_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

using IdxTest = TempDir;

TEST_F(IdxTest, ReadsGzipAndPlainFiles) {
  Bytes data(2 * 3 * 4);
  std::iota(data.begin(), data.end(), uint8_t{7});
  write_gz(path("a.gz"), idx_bytes(0x08, {2, 3, 4}, data));
  const Bytes plain = idx_bytes(0x08, {5}, {1, 2, 3, 4, 5});
  std::ofstream(path("plain"), std::ios::binary)
      .write(reinterpret_cast<const char*>(plain.data()), static_cast<std::streamsize>(plain.size()));
  const IdxArray a = read_idx(path("a.gz"));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.data, data);
  const IdxArray p = read_idx(path("plain"));
  EXPECT_EQ(p.dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(p.data, (Bytes{1, 2, 3, 4, 5}));
}

TEST_F(IdxTest, RejectsMalformedFiles) {
  const auto check = [&](const std::string& name, const Bytes& bytes, const std::string& needle) {
    write_gz(path(name), bytes);
    EXPECT_ERROR_HAS(read_idx(path(name)), path(name) + ": " + needle);
  };
  check("truncated.gz", idx_bytes(0x08, {10, 4}, Bytes(25)),
        "truncated: header says 10x4 (40 bytes of data), file holds 25");
  check("short_header.gz", {0, 0, 8, 3, 0, 0}, "truncated");
  check("tiny.gz", {0, 0}, "truncated");
  check("empty.gz", {}, "truncated");
  check("magic.gz", {0x1f, 0x8b, 8, 1, 0, 0, 0, 1, 0}, "bad magic");
  check("type.gz", idx_bytes(0x0D, {1}, Bytes(4)), "unsupported IDX element type 0x0d (float32)");
  check("zero.gz", idx_bytes(0x08, {3, 0, 2}, {}), "dimension 1 is 0");
  check("nodims.gz", {0, 0, 8, 0}, "IDX header declares 0 dimensions");
  check("absurd.gz", idx_bytes(0x08, {65536, 65536}, {}), "absurd dimensions");
  check("trailing.gz", idx_bytes(0x08, {2}, {1, 2, 3}), "trailing garbage: 1 bytes");
}

TEST_F(IdxTest, MissingDirectoryAndCorruptGzip) {
  EXPECT_ERROR_HAS(read_idx(path("nope.gz")), path("nope.gz") + ": does not exist");
  EXPECT_ERROR_HAS(read_idx(dir_.string()), "is a folder");
  // A flipped CRC byte, and a .gz cut off mid-stream.
  write_gz(path("x.gz"), idx_bytes(0x08, {4000}, Bytes(4000, 9)));
  std::ifstream in(path("x.gz"), std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string bad_crc = raw;
  bad_crc[bad_crc.size() - 6] ^= 1;
  std::ofstream(path("crc.gz"), std::ios::binary) << bad_crc;
  std::ofstream(path("cut.gz"), std::ios::binary) << raw.substr(0, raw.size() - 12);
  EXPECT_ERROR_HAS(read_idx(path("crc.gz")), "incorrect data check");
  EXPECT_ERROR_HAS(read_idx(path("cut.gz")), "cut short");
}

using FashionMnistTest = TempDir;

// Writes a tiny Fashion-MNIST-shaped split: pixel i of image n is (n + i) % 256, label n is n % 10.
void write_fake_split(const fs::path& dir, const std::string& prefix, uint32_t n, uint32_t labels_n,
                      uint8_t bad_label = 0) {
  Bytes px(n * 28 * 28), lb(labels_n);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i / 784 + i) % 256);
  for (uint32_t i = 0; i < labels_n; ++i) lb[i] = static_cast<uint8_t>(i % 10);
  if (bad_label && labels_n > 0) lb[labels_n - 1] = bad_label;
  write_gz(dir / (prefix + "-images-idx3-ubyte.gz"), idx_bytes(0x08, {n, 28, 28}, px));
  write_gz(dir / (prefix + "-labels-idx1-ubyte.gz"), idx_bytes(0x08, {labels_n}, lb));
}

TEST_F(FashionMnistTest, LoadsFakeTinyDataset) {
  write_fake_split(dir_, "train", 12, 12);
  write_fake_split(dir_, "t10k", 3, 3);
  const Dataset train = load_fashion_mnist(dir_.string(), true);
  EXPECT_EQ(std::vector<int64_t>({train.count, train.channels, train.height, train.width}),
            std::vector<int64_t>({12, 1, 28, 28}));
  EXPECT_EQ(train.classes, 10);
  EXPECT_EQ(train.name, "fashion-mnist-train");
  ASSERT_EQ(train.images.size(), 12u * 784);
  EXPECT_EQ(train.labels[11], 1);
  const size_t i = 5 * 784 + 100;  // raw pixel value (5 + i) % 256
  EXPECT_NEAR(train.images[i], (static_cast<float>((5 + i) % 256) / 255.0f - 0.2860f) / 0.3530f, 1e-6);
  EXPECT_NEAR(train.images[0], -0.2860f / 0.3530f, 1e-6);
  EXPECT_EQ(load_fashion_mnist(dir_.string(), false).count, 3);
}

TEST_F(FashionMnistTest, RejectsInconsistentFiles) {
  write_fake_split(dir_, "train", 4, 5);
  EXPECT_ERROR_HAS(load_fashion_mnist(dir_.string(), true), "holds 5 labels but");
  write_fake_split(dir_, "train", 4, 4, /*bad_label=*/10);
  EXPECT_ERROR_HAS(load_fashion_mnist(dir_.string(), true), "label 3 is 10 (expected 0..9)");
  write_gz(dir_ / "train-images-idx3-ubyte.gz", idx_bytes(0x08, {2, 32, 32}, Bytes(2048)));
  EXPECT_ERROR_HAS(load_fashion_mnist(dir_.string(), true), "shape 2x32x32");
  EXPECT_ERROR_HAS(load_fashion_mnist(dir_.string(), false),
                   "t10k-images-idx3-ubyte.gz not found, nor t10k-images-idx3-ubyte (expected the four");
}

// Issue 15: a folder of uncompressed IDX files (as many downloads unpack them) was "not found".
TEST_F(FashionMnistTest, LoadsUncompressedFilesLikeGzipOnes) {
  write_fake_split(dir_, "train", 12, 12);
  const Dataset from_gz = load_fashion_mnist(dir_.string(), true);
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"}) fs::remove(dir_ / name);
  // The same pixels and labels as write_fake_split, uncompressed under the names without .gz.
  Bytes px(12 * 28 * 28), lb(12);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i / 784 + i) % 256);
  for (uint32_t i = 0; i < 12; ++i) lb[i] = static_cast<uint8_t>(i % 10);
  const auto write_raw = [&](const fs::path& p, const Bytes& b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  write_raw(dir_ / "train-images-idx3-ubyte", idx_bytes(0x08, {12, 28, 28}, px));
  write_raw(dir_ / "train-labels-idx1-ubyte", idx_bytes(0x08, {12}, lb));
  const Dataset plain = load_fashion_mnist(dir_.string(), true);
  EXPECT_EQ(plain.count, 12);
  EXPECT_EQ(plain.images, from_gz.images);
  EXPECT_EQ(plain.labels, from_gz.labels);
}

TEST(FashionMnist, MissingFolderMessage) {
  EXPECT_EQ(error_of([] { load_fashion_mnist("/nonexistent/vdnn-data", true); }),
            "data folder '/nonexistent/vdnn-data' does not exist (expected Fashion-MNIST IDX files, .gz or not, "
            "there; install Debian's dataset-fashion-mnist or pass --data DIR)");
}

// Runs where Debian's dataset-fashion-mnist is installed (CI installs it); skipped, loudly,
// elsewhere.
TEST(FashionMnist, RealDatasetIfInstalled) {
  if (!fs::is_directory(kFashionMnistDefaultDir)) {
    GTEST_SKIP() << kFashionMnistDefaultDir << " not found: install dataset-fashion-mnist to run";
  }
  for (const bool train : {true, false}) {
    const Dataset d = load_fashion_mnist(kFashionMnistDefaultDir, train);
    ASSERT_EQ(d.count, train ? 60000 : 10000);
    std::vector<int64_t> per_class(10, 0);
    for (int32_t l : d.labels) {
      ASSERT_TRUE(l >= 0 && l < 10) << l;
      ++per_class[static_cast<size_t>(l)];
    }
    for (int64_t n : per_class) EXPECT_NEAR(n, d.count / 10, d.count / 50);
    const double sum = std::accumulate(d.images.begin(), d.images.end(), 0.0);
    EXPECT_NEAR(sum / static_cast<double>(d.images.size()), 0.0, 0.05);  // normalized
  }
}

TEST(Synthetic, DeterministicAndSeedDependent) {
  const Dataset a = make_synthetic(50, 2, 5, 6, 4, 11);
  const Dataset b = make_synthetic(50, 2, 5, 6, 4, 11);
  const Dataset c = make_synthetic(50, 2, 5, 6, 4, 12);
  ASSERT_EQ(a.images.size(), 50u * 2 * 5 * 6);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.images, c.images);
  for (int32_t l : a.labels) EXPECT_TRUE(l >= 0 && l < 4);
  EXPECT_ERROR_HAS(make_synthetic(0, 1, 2, 2, 2, 1), "count must be >= 1, got 0");
  EXPECT_ERROR_HAS(make_synthetic(10, 1, 2, 2, 0, 1), "classes must be >= 1");
}

TEST(Synthetic, TokenWindowsFollowOneRuleWithSomeNoiseAndTheirLabelsAreTheNextIds) {
  const Dataset d = make_synthetic_tokens(40, 16, 11, 7);
  EXPECT_TRUE(d.tokens);
  EXPECT_EQ(d.labels_per_sample, 16);
  EXPECT_EQ(d.classes, 11);
  ASSERT_EQ(d.images.size(), 40u * 16u);
  ASSERT_EQ(d.labels.size(), 40u * 16u);
  int64_t noise = 0;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t t = 0; t + 1 < 16; ++t) {
      const size_t at = static_cast<size_t>(i * 16 + t);
      EXPECT_EQ(d.images[at + 1], static_cast<float>(d.labels[at]));  // the label is the next window id
      ASSERT_GE(d.labels[at], 0);
      ASSERT_LT(d.labels[at], 11);
    }
  // The same seed, the same data; another seed, another rule.
  EXPECT_EQ(make_synthetic_tokens(40, 16, 11, 7).labels, d.labels);
  EXPECT_NE(make_synthetic_tokens(40, 16, 11, 8).labels, d.labels);
  // Most steps follow one rule: the most common successor of an id is its successor most times.
  std::vector<std::vector<int>> follows(11, std::vector<int>(11, 0));
  for (int64_t i = 0; i < 40 * 16; ++i) ++follows[static_cast<size_t>(d.images[i])][d.labels[i]];
  for (const auto& row : follows) {
    const int total = std::accumulate(row.begin(), row.end(), 0);
    noise += total - *std::max_element(row.begin(), row.end());
  }
  EXPECT_LT(noise, 40 * 16 / 5);
  EXPECT_ERROR_HAS(make_synthetic_tokens(4, 8, 1, 1), "vocabulary of 1 tokens");
}

TEST(Synthetic, NearestClassMeanSeparatesClasses) {
  const Dataset d = make_synthetic(400, 1, 8, 8, 5, 3);
  const int64_t s = 64;
  std::vector<double> mean(5 * s, 0.0), n(5, 0.0);
  for (int64_t i = 0; i < d.count; ++i) {
    n[d.labels[i]] += 1;
    for (int64_t k = 0; k < s; ++k) mean[d.labels[i] * s + k] += d.images[i * s + k];
  }
  for (int64_t k = 0; k < 5 * s; ++k) mean[k] /= std::max(1.0, n[k / s]);
  int correct = 0;
  for (int64_t i = 0; i < d.count; ++i) {
    std::vector<double> dist(5, 0.0);
    for (int c = 0; c < 5; ++c) {
      for (int64_t k = 0; k < s; ++k) {
        const double diff = d.images[i * s + k] - mean[c * s + k];
        dist[c] += diff * diff;
      }
    }
    correct += std::min_element(dist.begin(), dist.end()) - dist.begin() == d.labels[i];
  }
  EXPECT_GT(correct, 0.95 * d.count);
}

// A dataset whose sample i has pixels 1000*i + k and label i % 7, so batches can be decoded.
Dataset indexed_dataset(int64_t count) {
  Dataset d;
  d.count = count, d.channels = 1, d.height = 2, d.width = 3, d.classes = 7, d.name = "indexed";
  for (int64_t i = 0; i < count; ++i) {
    for (int k = 0; k < 6; ++k) d.images.push_back(static_cast<float>(1000 * i + k));
    d.labels.push_back(static_cast<int32_t>(i % 7));
  }
  return d;
}

// Sequential reference: epoch order per the documented rule, one index list per batch.
Batches reference_batches(int64_t count, int64_t batch, bool shuffle, uint64_t seed, int epoch) {
  std::vector<int64_t> order(count);
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle) {
    Rng rng(seed, 1000 + static_cast<uint64_t>(epoch));
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  }
  Batches out;
  for (int64_t b = 0; b * batch < count && !(shuffle && (b + 1) * batch > count); ++b) {
    out.emplace_back(order.begin() + b * batch, order.begin() + std::min(count, (b + 1) * batch));
  }
  return out;
}

// Drains one epoch, decoding each batch back to sample indices and checking pixels and labels.
Batches drain(BatchLoader& loader, int epoch, bool slow = false) {
  loader.start_epoch(epoch);
  std::vector<float> x(loader.batch_size() * 6);
  std::vector<int32_t> y(loader.batch_size());
  Batches out;
  int64_t n = -1;
  while (loader.next(x.data(), y.data(), &n)) {
    out.emplace_back();
    for (int64_t j = 0; j < n; ++j) {
      const int64_t id = static_cast<int64_t>(x[j * 6]) / 1000;
      for (int k = 0; k < 6; ++k) EXPECT_EQ(x[j * 6 + k], static_cast<float>(1000 * id + k));
      EXPECT_EQ(y[j], id % 7);
      out.back().push_back(id);
    }
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // worker runs ahead
  }
  return out;
}

TEST(BatchLoader, MatchesSequentialReferenceAndCoversEveryIndex) {
  const Dataset d = indexed_dataset(103);
  for (const bool shuffle : {true, false}) {
    BatchLoader loader(d, 10, shuffle, 5);
    EXPECT_EQ(loader.batches_per_epoch(), shuffle ? 10 : 11);
    for (int epoch = 0; epoch < 3; ++epoch) {
      const Batches got = drain(loader, epoch, /*slow=*/epoch == 1);
      EXPECT_EQ(got, reference_batches(103, 10, shuffle, 5, epoch)) << "epoch " << epoch;
      std::vector<int> seen(103, 0);
      for (const auto& b : got)
        for (int64_t id : b) ++seen[id];
      // Training drops the 3 left-over samples; evaluation sees each sample exactly once.
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), shuffle ? 100 : 103);
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), shuffle ? 3 : 0);
      EXPECT_EQ(got.back().size(), shuffle ? 10u : 3u);  // evaluation keeps the partial batch
    }
  }
  const Dataset d40 = indexed_dataset(40);
  BatchLoader exact(d40, 8, true, 9);
  std::vector<int> seen(40, 0);
  for (const auto& b : drain(exact, 4))
    for (int64_t id : b) ++seen[id];
  EXPECT_EQ(seen, std::vector<int>(40, 1));  // with no partial batch every index appears once
}

TEST(BatchLoader, OrderDependsOnSeedAndEpochOnly) {
  const Dataset d = indexed_dataset(64);
  BatchLoader a(d, 16, true, 1), b(d, 16, true, 1), c(d, 16, true, 2);
  const Batches a3 = drain(a, 3);
  EXPECT_EQ(drain(a, 0), drain(b, 0));
  EXPECT_EQ(a3, drain(b, 3));  // same (seed, epoch) gives the same order regardless of history
  EXPECT_NE(drain(a, 0), a3);
  EXPECT_NE(drain(a, 0), drain(c, 0));
  // Abandoning an epoch mid-way leaks no stale batch into the next one.
  std::vector<float> x(16 * 6);
  std::vector<int32_t> y(16);
  int64_t n = 0;
  a.start_epoch(7);
  ASSERT_TRUE(a.next(x.data(), y.data(), &n));
  EXPECT_EQ(drain(a, 2), reference_batches(64, 16, true, 1, 2));
}

TEST(BatchLoader, RestartAndDestroyMidEpochDoNotHang) {
  std::promise<void> done;
  auto finished = done.get_future();
  std::thread([p = std::move(done)]() mutable {
    const Dataset d = indexed_dataset(500);
    { BatchLoader idle(d, 7, true, 1); }  // never started
    std::vector<float> x(7 * 6);
    std::vector<int32_t> y(7);
    int64_t n = 0;
    for (int round = 0; round < 50; ++round) {
      BatchLoader loader(d, 7, true, 1);
      loader.start_epoch(0);
      for (int k = 0; k < round % 4; ++k) loader.next(x.data(), y.data(), &n);
      loader.start_epoch(1);  // abandon epoch 0 mid-way
      loader.next(x.data(), y.data(), &n);
    }  // destroyed with the worker filling or holding batches
    p.set_value();
  }).detach();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "BatchLoader hung on restart or destruction";
}

TEST(BatchLoader, RejectsBadConfiguration) {
  const Dataset d = indexed_dataset(5);
  EXPECT_ERROR_HAS(BatchLoader(d, 8, true, 1), "dataset 'indexed': 5 samples make no full batch of 8");
  EXPECT_EQ(BatchLoader(d, 8, false, 1).batches_per_epoch(), 1);
  EXPECT_ERROR_HAS(BatchLoader(d, 0, false, 1), "batch size must be >= 1, got 0");
  Dataset broken = d;
  broken.labels.pop_back();
  EXPECT_ERROR_HAS(BatchLoader(broken, 2, false, 1), "holds 30 floats and 4 labels");
}

// Data parallel (DistributedSampler's split): the ranks' batch k together are the one-process
// batch k of ranks x batch samples, and no sample is read twice in an epoch; evaluation covers
// every sample exactly once, however uneven the shards.
TEST(BatchLoader, ShardsSplitEachGlobalBatchAcrossRanks) {
  const Dataset d = indexed_dataset(103);
  const int ranks = 3;
  const int64_t batch = 5;
  const Batches whole = reference_batches(103, batch * ranks, /*shuffle=*/true, 9, 2);
  std::vector<Batches> shards;
  for (int r = 0; r < ranks; ++r) {
    BatchLoader loader(d, batch, true, 9, {r, ranks});
    EXPECT_EQ(loader.batches_per_epoch(), 103 / (batch * ranks));
    shards.push_back(drain(loader, 2));
  }
  ASSERT_EQ(whole.size(), shards[0].size());
  std::vector<int> seen(103, 0);
  for (size_t k = 0; k < whole.size(); ++k) {
    std::vector<int64_t> joined;
    for (const Batches& s : shards) {
      ASSERT_EQ(s[k].size(), static_cast<size_t>(batch));
      joined.insert(joined.end(), s[k].begin(), s[k].end());
    }
    for (int64_t id : joined) ++seen[id];
    std::sort(joined.begin(), joined.end());
    std::vector<int64_t> expected = whole[k];
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(joined, expected) << "global batch " << k;
  }
  EXPECT_EQ(*std::max_element(seen.begin(), seen.end()), 1);
  std::vector<int> evaluated(103, 0);
  for (int r = 0; r < ranks; ++r) {
    BatchLoader loader(d, batch, false, 9, {r, ranks});
    for (const auto& b : drain(loader, 0))
      for (int64_t id : b) ++evaluated[id];
  }
  EXPECT_EQ(std::count(evaluated.begin(), evaluated.end(), 1), 103);
  EXPECT_ERROR_HAS(BatchLoader(d, 40, true, 9, {0, 3}), "103 samples make no full batch of 120 (3 ranks x 40)");
}

}  // namespace test_idx_and_data
}  // namespace vdnn
