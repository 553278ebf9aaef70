// Tests for token data (data/token_windows.h, data/token_file.h, data/char_text.h): nanoGPT's .bin
// windows and labels (written here and by NumPy as prepare.py writes them), text as characters
// (vocabulary and split against Python's sorted(set(data)) and int(n * 0.9)), windows drawn
// reproducibly from the seed, BatchLoader's labels_per_sample, every refused file named with its
// byte offset, --data's token sources, and Debian's King James Bible read as characters.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "core/graph.h"
#include "data/batch_loader.h"
#include "data/char_text.h"
#include "data/data_source.h"
#include "data/token_file.h"
#include "error_of.h"
#include "io/json_text.h"
#include "util/text_file.h"
#include "util/utf8.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_token_data {

namespace fs = std::filesystem;
using test::error_of;
using test::expect_error;

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// nanoGPT's layout: each id a little-endian uint16.
void write_tokens(const fs::path& path, const std::vector<uint16_t>& ids) {
  std::string bytes;
  for (uint16_t id : ids) bytes += static_cast<char>(id & 0xff), bytes += static_cast<char>(id >> 8);
  write_bytes(path, bytes);
}

// 0 .. n-1 in a shuffled order: every id appears once, so a window's first id gives its offset.
std::vector<uint16_t> distinct_ids(int n, uint64_t seed) {
  std::vector<uint16_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), uint16_t{0});
  Rng rng(seed);
  for (size_t i = ids.size() - 1; i > 0; --i) std::swap(ids[i], ids[rng.below(i + 1)]);
  return ids;
}

// One epoch's batches: every sample's ids and labels, in order.
struct Epoch {
  std::vector<std::vector<float>> samples;
  std::vector<std::vector<int32_t>> labels;
};

Epoch read_epoch(const Dataset& d, bool shuffle, uint64_t seed, int epoch, int threads = 1, int64_t batch = 4) {
  BatchLoader loader(d, batch, shuffle, seed, {}, {}, threads);
  EXPECT_EQ(loader.labels_per_sample(), d.labels_per_sample);
  loader.start_epoch(epoch);
  Epoch out;
  BatchLoader::BatchView b;
  while (loader.next(&b)) {
    for (int64_t i = 0; i < b.count; ++i) {
      out.samples.emplace_back(b.images + i * d.channels, b.images + (i + 1) * d.channels);
      out.labels.emplace_back(b.labels + i * d.labels_per_sample, b.labels + (i + 1) * d.labels_per_sample);
    }
  }
  return out;
}

// The offset of a window of distinct ids, checked: its ids are the file's from there, its labels
// the ids one further.
int64_t checked_offset(const std::vector<uint16_t>& ids, const std::vector<float>& sample,
                       const std::vector<int32_t>& labels) {
  const auto at = std::find(ids.begin(), ids.end(), static_cast<uint16_t>(sample.at(0)));
  EXPECT_NE(at, ids.end());
  const int64_t o = at - ids.begin();
  const int64_t t = static_cast<int64_t>(sample.size());
  EXPECT_LE(o + t, static_cast<int64_t>(ids.size()) - 1) << "the window's last label is past the end";
  for (int64_t j = 0; j < t && o + j + 1 < static_cast<int64_t>(ids.size()); ++j) {
    EXPECT_EQ(sample[static_cast<size_t>(j)], ids[static_cast<size_t>(o + j)]) << "offset " << o << " position " << j;
    EXPECT_EQ(labels.at(static_cast<size_t>(j)), ids[static_cast<size_t>(o + j + 1)]) << "offset " << o;
  }
  return o;
}

class TokenData : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(TokenData, TrainingWindowsAreTheFilesIdsAtRandomOffsetsWithTheNextIdsAsLabels) {
  const std::vector<uint16_t> ids = distinct_ids(1000, 1);
  write_tokens(path("train.bin"), ids);
  const Dataset d = load_token_file(path("train.bin"), {.window = 16, .vocab = 1000, .train = true}, "t");
  EXPECT_TRUE(d.tokens);
  EXPECT_EQ(d.count, 1000 / 16);  // an epoch: floor(tokens / T) windows
  EXPECT_EQ(d.channels * d.height * d.width, 16);
  EXPECT_EQ(d.labels_per_sample, 16);
  EXPECT_EQ(d.classes, 1000);
  EXPECT_TRUE(d.labels.empty());
  const Epoch e = read_epoch(d, /*shuffle=*/true, /*seed=*/3, /*epoch=*/0);
  ASSERT_EQ(e.samples.size(), 60u);  // 15 full batches of 4
  std::set<int64_t> offsets;
  for (size_t i = 0; i < e.samples.size(); ++i) offsets.insert(checked_offset(ids, e.samples[i], e.labels[i]));
  // nanoGPT's randint(len - T): any offset, not a grid of T.
  EXPECT_GT(offsets.size(), 50u);
  EXPECT_TRUE(std::any_of(offsets.begin(), offsets.end(), [](int64_t o) { return o % 16 != 0; }));
  EXPECT_LE(*offsets.rbegin(), 1000 - 16 - 1);
}

TEST_F(TokenData, EvaluationWindowsAreConsecutiveAndCoverEveryPredictionOnce) {
  const std::vector<uint16_t> ids = distinct_ids(100, 2);
  write_tokens(path("val.bin"), ids);
  const Dataset d = load_token_file(path("val.bin"), {.window = 8, .vocab = 100, .train = false}, "v");
  EXPECT_EQ(d.count, (100 - 1) / 8);
  const Epoch e = read_epoch(d, /*shuffle=*/false, 1, 0);
  ASSERT_EQ(e.samples.size(), 12u);  // evaluation keeps the last partial batch
  for (size_t i = 0; i < e.samples.size(); ++i)
    EXPECT_EQ(checked_offset(ids, e.samples[i], e.labels[i]), static_cast<int64_t>(8 * i));
  EXPECT_EQ(read_epoch(d, false, 1, 5).samples, e.samples);  // the same every epoch and seed
}

TEST_F(TokenData, WindowsComeFromTheSeedAndEpochWhateverTheThreadsAndDifferAcrossSeedsAndEpochs) {
  write_tokens(path("train.bin"), distinct_ids(4000, 3));
  const Dataset d = load_token_file(path("train.bin"), {.window = 32, .vocab = 4000}, "t");
  const Epoch a = read_epoch(d, true, 7, 0, /*threads=*/1);
  EXPECT_EQ(read_epoch(d, true, 7, 0, /*threads=*/3).samples, a.samples);
  EXPECT_EQ(read_epoch(d, true, 7, 0, /*threads=*/3).labels, a.labels);
  EXPECT_NE(read_epoch(d, true, 8, 0).samples, a.samples);  // another seed
  EXPECT_NE(read_epoch(d, true, 7, 1).samples, a.samples);  // another epoch
  // A run resumed at batch 5 reads what the whole epoch read from there.
  BatchLoader loader(d, 4, true, 7);
  loader.start_epoch(0, /*first_batch=*/5);
  BatchLoader::BatchView b;
  ASSERT_TRUE(loader.next(&b));
  EXPECT_EQ(std::vector<float>(b.images, b.images + 32), a.samples[20]);
}

// Debian's python3 and NumPy (python3-numpy, with python3-torch in scripts/setup.sh).
TEST_F(TokenData, ReadsTheBinFileNumpyWritesAsNanoGptsPrepareDoes) {
  const std::vector<uint16_t> ids = {50256, 0, 1, 255, 256, 258, 4097, 65535, 12345, 7, 50000, 31};
  std::string list;
  for (uint16_t id : ids) list += std::to_string(id) + ",";
  const test::CliRun r = test::run_command("/usr/bin/python3 -c \"import numpy as np; np.array([" + list +
                                           "], dtype=np.uint16).tofile('" + path("train.bin") + "')\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Dataset d = load_token_file(path("train.bin"), {.window = 11, .vocab = 65536, .train = false}, "np");
  ASSERT_EQ(d.count, 1);
  const Epoch e = read_epoch(d, false, 1, 0, 1, 1);
  for (size_t j = 0; j < 11; ++j) {
    EXPECT_EQ(e.samples[0][j], static_cast<float>(ids[j]));
    EXPECT_EQ(e.labels[0][j], ids[j + 1]);
  }
}

TEST_F(TokenData, TextIsCharactersWithTheSortedVocabularyAndTheLastTenthHeldOutAsPythonSplitsIt) {
  // ASCII, 2-, 3- and 4-byte characters, and "\r\n" kept as two characters.
  std::string text;
  for (int i = 0; i < 12; ++i)
    text += "To be, or not to be: caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve \xf0\x9f\x99\x82\r\n";
  write_bytes(path("input.txt"), text);
  const test::CliRun py = test::run_command(
      "/usr/bin/python3 -c \"import json; d = open('" + path("input.txt") +
      "', encoding='utf-8', newline='').read(); print(json.dumps({'itos': sorted(set(d)), 'n': len(d), "
      "'split': int(len(d) * 0.9)}))\"");
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const nlohmann::json want = parse_json_text(py.output, "python");
  const CharText parsed = parse_char_text(text, "input.txt");
  EXPECT_EQ(parsed.vocabulary, want["itos"].get<std::vector<std::string>>());
  EXPECT_EQ(parsed.characters, want["n"].get<int64_t>());
  EXPECT_EQ(parsed.split, want["split"].get<int64_t>());

  const int64_t t = 10;
  const Dataset train = load_char_text(path("input.txt"), {.window = t, .train = true}, "train");
  const Dataset val = load_char_text(path("input.txt"), {.window = t, .train = false}, "val");
  EXPECT_EQ(train.classes, static_cast<int>(parsed.vocabulary.size()));
  EXPECT_EQ(val.classes, train.classes);  // one vocabulary, the whole file's
  EXPECT_EQ(train.vocabulary, parsed.vocabulary);
  EXPECT_EQ(train.count, parsed.split / t);
  EXPECT_EQ(val.count, (parsed.characters - parsed.split - 1) / t);
  // The held-out windows decode, through the vocabulary, to the text's last tenth, in order.
  std::vector<std::string> chars;  // the text's characters, in order
  for (size_t at = 0; at < text.size();) {
    const size_t start = at;
    char32_t c = 0;
    ASSERT_TRUE(next_code_point(text, &at, &c));
    chars.push_back(text.substr(start, at - start));
  }
  const Epoch e = read_epoch(val, false, 1, 0);
  for (size_t w = 0; w < e.samples.size(); ++w)
    for (int64_t j = 0; j < t; ++j) {
      const size_t k = static_cast<size_t>(parsed.split + static_cast<int64_t>(w) * t + j);
      EXPECT_EQ(val.vocabulary.at(static_cast<size_t>(e.samples[w][static_cast<size_t>(j)])), chars[k]);
      EXPECT_EQ(val.vocabulary.at(static_cast<size_t>(e.labels[w][static_cast<size_t>(j)])), chars[k + 1]);
    }
  // Training windows lie within the first 90%: their last label is before the split.
  for (const auto& labels : read_epoch(train, true, 1, 0, 1, 2).labels)
    for (int32_t id : labels) EXPECT_LT(id, train.classes);
  write_vocabulary(path("run.vocab.json"), train.vocabulary, "input.txt");
  const nlohmann::json saved = parse_json_text(read_text_file(path("run.vocab.json")), "run.vocab.json");
  EXPECT_EQ(saved["itos"].get<std::vector<std::string>>(), parsed.vocabulary);
  EXPECT_EQ(saved["vocab_size"].get<size_t>(), parsed.vocabulary.size());
}

TEST(TokenDataLoader, CopiesLabelsPerSampleLabelsWithEachSample) {
  Dataset d;
  d.count = 10, d.channels = 2, d.height = 1, d.width = 1, d.classes = 100, d.labels_per_sample = 3;
  for (int64_t i = 0; i < d.count; ++i) {
    d.images.insert(d.images.end(), {static_cast<float>(i), 0.5f});
    for (int k = 0; k < 3; ++k) d.labels.push_back(static_cast<int32_t>(10 * i + k));
  }
  for (bool shuffle : {true, false}) {
    BatchLoader loader(d, 3, shuffle, 5, {}, {}, /*threads=*/2);
    loader.start_epoch(1);
    std::vector<float> x(3 * 2);
    std::vector<int32_t> y(3 * 3);
    int64_t n = 0, seen = 0;
    while (loader.next(x.data(), y.data(), &n)) {
      for (int64_t i = 0; i < n; ++i, ++seen) {
        const int32_t sample = static_cast<int32_t>(x[static_cast<size_t>(2 * i)]);
        for (int k = 0; k < 3; ++k) EXPECT_EQ(y[static_cast<size_t>(3 * i + k)], 10 * sample + k);
      }
    }
    EXPECT_EQ(seen, shuffle ? 9 : 10);
  }
  d.labels.pop_back();
  expect_error([&] { BatchLoader(d, 3, true, 5); }, {"29 labels", "expected 20 and 30", "3 labels"});
}

TEST_F(TokenData, EveryBadTokenFileIsRefusedNamingTheFileAndTheByteOffset) {
  const TokenFileOptions o{.window = 16, .vocab = 256};
  write_bytes(path("empty.bin"), "");
  expect_error([&] { load_token_file(path("empty.bin"), o, "x"); }, {path("empty.bin"), "empty", "byte offset 0"});
  write_bytes(path("odd.bin"), std::string(41, '\1'));
  expect_error([&] { load_token_file(path("odd.bin"), o, "x"); }, {path("odd.bin"), "odd", "byte offset 40", "cut"});
  write_tokens(path("short.bin"), std::vector<uint16_t>(16, 3));
  expect_error([&] { load_token_file(path("short.bin"), o, "x"); },
               {path("short.bin"), "16 tokens", "byte offset 0", "end at 32", "17"});
  std::vector<uint16_t> ids(100, 5);
  ids[37] = 300;
  write_tokens(path("big.bin"), ids);
  expect_error([&] { load_token_file(path("big.bin"), o, "x"); },
               {path("big.bin"), "token id 300", "byte offset 74", "vocabulary size 256", "--vocab"});
  // Above scan_bytes the ids are checked as windows are read: the batch that holds it throws.
  TokenFileOptions lazy = o;
  lazy.train = false, lazy.scan_bytes = 0;
  const Dataset d = load_token_file(path("big.bin"), lazy, "x");
  BatchLoader loader(d, 1, false, 1);
  loader.start_epoch(0);
  BatchLoader::BatchView b;
  EXPECT_TRUE(loader.next(&b));  // ids 0..16
  expect_error([&] { loader.next(&b), loader.next(&b); }, {path("big.bin"), "token id 300", "byte offset 74"});
  fs::create_directory(path("folder.bin"));
  expect_error([&] { load_token_file(path("folder.bin"), o, "x"); }, {path("folder.bin"), "is a folder"});
  ASSERT_EQ(::mkfifo(path("fifo.bin").c_str(), 0600), 0);
  expect_error([&] { load_token_file(path("fifo.bin"), o, "x"); }, {path("fifo.bin"), "is a FIFO"});
  expect_error([&] { load_char_text(path("fifo.bin"), {.window = 4}, "x"); }, {path("fifo.bin"), "is a FIFO"});
}

TEST_F(TokenData, EveryBadTextIsRefusedNamingTheFileAndTheByteOffset) {
  write_bytes(path("empty.txt"), "");
  expect_error([&] { load_char_text(path("empty.txt"), {.window = 4}, "x"); },
               {path("empty.txt"), "empty", "byte offset 0"});
  write_bytes(path("latin1.txt"), "caf\xe9 au lait");
  expect_error([&] { load_char_text(path("latin1.txt"), {.window = 4}, "x"); },
               {path("latin1.txt"), "not UTF-8", "byte offset 3", "0xe9"});
  write_bytes(path("cut.txt"), "ok \xe2\x80");  // a 3-byte character cut short
  expect_error([&] { parse_char_text("ok \xe2\x80", path("cut.txt")); }, {path("cut.txt"), "byte offset 3"});
  write_bytes(path("small.txt"), std::string(100, 'a') + "bcdefghij");  // 109 characters: 98 train, 11 held out
  expect_error([&] { load_char_text(path("small.txt"), {.window = 11, .train = false}, "x"); },
               {path("small.txt"), "last 10%", "byte offset 98", "11 characters", "12"});
  expect_error([&] { load_char_text(path("small.txt"), {.window = 98, .train = true}, "x"); },
               {path("small.txt"), "first 90%", "byte offset 0 to 98", "98 characters"});
  std::string many;  // 65537 distinct characters, each 3 or 4 bytes
  for (char32_t c = 0x800, n = 0; n < 65537; ++c) {
    if (c >= 0xd800 && c < 0xe000) continue;  // surrogates are not characters
    if (c < 0x10000)
      many += {static_cast<char>(0xe0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)),
               static_cast<char>(0x80 | (c & 0x3f))};
    else
      many += {static_cast<char>(0xf0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3f)),
               static_cast<char>(0x80 | ((c >> 6) & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
    ++n;
  }
  expect_error([&] { parse_char_text(many, "many.txt"); }, {"many.txt", "more than 65536", "byte offset"});
}

// --data: which files are token sources, T from the model, and the refusals.
TEST_F(TokenData, DataNamesTokenFilesFoldersAndTextsAndTakesTheWindowFromTheModel) {
  const Graph lm("lm", Shape{8}, 300, InputType::kTokens);
  write_tokens(path("train.bin"), std::vector<uint16_t>(200, 7));
  DataSource source{.data = path("train.bin")};
  EXPECT_EQ(data_layout(source), DataLayout::kTokenFile);
  EXPECT_FALSE(has_evaluation_split(source));
  expect_error([&] { load_data(source, lm, Split::kTest); }, {path("train.bin"), "--val-data", "--no-eval"});
  const Dataset d = load_data(source, lm, Split::kTrain);
  EXPECT_EQ(d.channels, 8);
  EXPECT_EQ(d.classes, 300);  // the model's class count: --vocab's default
  write_tokens(path("val.bin"), std::vector<uint16_t>(50, 299));
  EXPECT_TRUE(has_evaluation_split(source));
  EXPECT_EQ(load_data(source, lm, Split::kTest).count, 49 / 8);
  source.vocab = 200;  // --vocab, stricter than the model
  expect_error([&] { load_data(source, lm, Split::kTest); }, {path("val.bin"), "token id 299", "byte offset 0"});
  // nanoGPT's data/<name>/ folder; CIFAR-100's (train.bin and test.bin) stays CIFAR.
  EXPECT_EQ(data_layout({.data = dir_.string()}), DataLayout::kTokenFolder);
  EXPECT_EQ(load_data({.data = dir_.string()}, lm, Split::kTest).count, 49 / 8);
  write_bytes(path("test.bin"), std::string(3074, '\0'));
  EXPECT_EQ(data_layout({.data = dir_.string()}), DataLayout::kCifar);
  // Text, by name or by --data-format.
  write_bytes(path("notes.md"), std::string(300, 'x') + "yz");
  expect_error([&] { data_layout({.data = path("notes.md")}); }, {path("notes.md"), "--data-format tokens|text"});
  DataSource text{.data = path("notes.md")};
  text.format = "text";
  EXPECT_EQ(data_layout(text), DataLayout::kText);
  const Dataset chars = load_data(text, lm, Split::kTrain);
  EXPECT_EQ(chars.classes, 3);
  EXPECT_EQ(chars.vocabulary, (std::vector<std::string>{"x", "y", "z"}));
  text.val_data = path("val.bin");
  expect_error([&] { data_layout(text); }, {"--val-data", "last 10%"});
  // What does not fit: an image model, augmentation, a FIFO, --data-format on a folder or data set.
  expect_error(
      [&] {
        load_data(source, Graph("cnn", Shape{1, 28, 28}, 10), Split::kTrain);
      },
      {path("train.bin"), "model 'cnn'", "1x28x28", "\"input_type\": \"tokens\""});
  expect_error([&] { load_data(source, Graph("values", Shape{8}, 300), Split::kTrain); },
               {path("train.bin"), "model 'values'", "(values, not tokens)"});
  source.augment.flip = true;
  expect_error([&] { load_data(source, lm, Split::kTrain); }, {"--augment", "images"});
  ASSERT_EQ(::mkfifo(path("fifo.txt").c_str(), 0600), 0);
  expect_error([&] { data_layout({.data = path("fifo.txt")}); }, {path("fifo.txt"), "is a FIFO"});
  DataSource folder{.data = dir_.string()};
  folder.format = "tokens";
  expect_error([&] { data_layout(folder); }, {"--data-format tokens", "is a folder"});
  DataSource named{.data = "synthetic"};
  named.format = "text";
  expect_error([&] { data_layout(named); }, {"--data-format text", "synthetic"});
}

// The CLI's wiring: --data FILE.bin|FILE.txt, --data-format, --vocab, T from the model's [T] input.
TEST_F(TokenData, VdnnLoadReadsTokenFilesAndTextsAndTrainRefusesAModelOfValues) {
  write_bytes(path("ids.json"), R"({"name": "ids", "input": [16], "classes": 80,
      "layers": [{"name": "fc", "type": "fc", "units": 80}, {"name": "loss", "type": "softmax_cross_entropy"}]})");
  write_bytes(path("lm.json"), R"({"name": "lm", "input": [16], "input_type": "tokens", "classes": 80,
      "layers": [{"name": "wte", "type": "embedding", "vocab": 80, "dim": 8},
                 {"name": "head", "type": "linear", "units": 80}, {"name": "loss", "type": "token_cross_entropy"}]})");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "All the world's a stage, and all the men and women merely players.\n";
  write_bytes(path("input.txt"), text);
  write_bytes(path("corpus"), text);
  std::vector<uint16_t> ids(3000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(i % 79);
  write_tokens(path("train.bin"), ids);
  const std::string model = " --model " + path("lm.json") + " --batch 4 --batches 3";
  for (const std::string& data : {path("input.txt"), path("train.bin"), path("corpus") + " --data-format text"}) {
    const test::CliRun r = test::vdnn("load --data " + data + model);
    EXPECT_EQ(r.exit_code, 0) << data << "\n" << r.output;
  }
  test::expect_user_error("load --data " + path("train.bin") + " --vocab 40" + model,
                          path("train.bin") + ": token id 40 at byte offset 80");
  test::expect_user_error("load --data " + path("corpus") + model, "--data-format tokens|text");
  test::expect_user_error(
      "train --data " + path("input.txt") + " --model " + path("ids.json") + " --batch 4 --iterations 1 --no-eval",
      "(values, not tokens)");
}

// Debian's bible-kjv (scripts/setup.sh's VDNN_TEST_PACKAGES) holds the King James Bible, 4.4 MB of
// English; its `bible` program writes it out as text, one verse a line, which trains a char GPT.
TEST_F(TokenData, DebiansKingJamesBibleIsReadAsCharacters) {
  ASSERT_TRUE(fs::exists("/usr/bin/bible")) << "install Debian's bible-kjv (scripts/setup.sh's VDNN_TEST_PACKAGES)";
  const test::CliRun r = test::run_command("/usr/bin/bible -f Gen1:1-Rev22:21 > " + path("kjv.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Dataset train = load_char_text(path("kjv.txt"), {.window = 256, .train = true}, "kjv-train");
  const Dataset val = load_char_text(path("kjv.txt"), {.window = 256, .train = false}, "kjv-val");
  std::printf("kjv.txt: %lld bytes, %d characters in its vocabulary, %lld training windows, %lld held out\n",
              static_cast<long long>(fs::file_size(path("kjv.txt"))), train.classes,
              static_cast<long long>(train.count), static_cast<long long>(val.count));
  EXPECT_GT(fs::file_size(path("kjv.txt")), 4'000'000u);
  EXPECT_GT(train.classes, 60);  // letters, digits, punctuation
  EXPECT_LT(train.classes, 100);
  for (const char* c : {"\n", " ", "A", "Z", "a", "z", ":", ";"})
    EXPECT_NE(std::find(train.vocabulary.begin(), train.vocabulary.end(), c), train.vocabulary.end()) << c;
  EXPECT_GT(train.count, 10000);
  EXPECT_GT(val.count, 1000);
}

}  // namespace test_token_data
}  // namespace vdnn
