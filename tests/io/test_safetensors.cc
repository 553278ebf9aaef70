// safetensors: a file written by vdnn reads back bit-identically, writes are atomic, and every
// kind of bad file gives one line naming the file and the problem (never a crash).
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

namespace fs = std::filesystem;

class SafeTensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_safetensors_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A file with this header text (length prefix added) and `data_bytes` zero bytes after it.
  std::string raw(const std::string& header, size_t data_bytes, const std::string& name = "raw.safetensors") {
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << header << std::string(data_bytes, '\0');
    return p;
  }

  // Expects reading `file` to throw one line naming it and containing `fragment`.
  static void expect_bad(const std::string& file, const std::string& fragment) {
    try {
      read_safetensors(file);
      ADD_FAILURE() << "no error for " << file << " (expected '" << fragment << "')";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << fragment << " not in: " << what;
    }
  }

  static SafeTensors sample() {
    SafeTensors f;
    f.metadata = {{"step", "42"}, {"model", "tiny"}};
    const float nan_payload = std::bit_cast<float>(0x7fc12345u);
    f.tensors.push_back({"conv1.weight", {2, 1, 3}, {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(),
                                                      std::numeric_limits<float>::infinity(), nan_payload, 3e38f}});
    f.tensors.push_back({"scalar", {}, {0.1f}});
    f.tensors.push_back({"empty", {0, 4}, {}});
    f.tensors.push_back({"fc.bias", {3}, {1.0f / 3, 2.0f / 3, -7.25f}});
    return f;
  }

  fs::path dir_;
};

TEST_F(SafeTensorsTest, RoundTripIsBitExact) {
  const SafeTensors f = sample();
  write_safetensors(path("a.safetensors"), f);
  const SafeTensors g = read_safetensors(path("a.safetensors"));
  EXPECT_EQ(g.path, path("a.safetensors"));
  EXPECT_EQ(g.metadata, f.metadata);
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    EXPECT_EQ(g.tensors[i].name, f.tensors[i].name);
    EXPECT_EQ(g.tensors[i].shape, f.tensors[i].shape);
    ASSERT_EQ(g.tensors[i].data.size(), f.tensors[i].data.size());
    // An empty tensor's data() may be null, and memcmp on null is undefined even for 0 bytes (UBSan).
    EXPECT_TRUE(f.tensors[i].data.empty() ||
                std::memcmp(g.tensors[i].data.data(), f.tensors[i].data.data(), f.tensors[i].data.size() * 4) == 0)
        << f.tensors[i].name;
  }
  EXPECT_EQ(g.find("fc.bias"), &g.tensors[3]);
  EXPECT_EQ(g.find("nope"), nullptr);
}

TEST_F(SafeTensorsTest, LayoutFollowsTheFormat) {
  write_safetensors(path("a.safetensors"), sample());
  std::ifstream in(path("a.safetensors"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "data starts 8-byte aligned";
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["step"], "42");
  EXPECT_EQ(header["conv1.weight"]["dtype"], "F32");
  EXPECT_EQ(header["conv1.weight"]["shape"], nlohmann::json({2, 1, 3}));
  EXPECT_EQ(header["conv1.weight"]["data_offsets"], nlohmann::json({0, 24}));
  EXPECT_EQ(header["fc.bias"]["data_offsets"], nlohmann::json({28, 40}));
  EXPECT_EQ(bytes.size(), 8 + n + 40);
  float first = 0;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  EXPECT_EQ(first, 1.5f);
}

TEST_F(SafeTensorsTest, WritesAreAtomicAndLeaveNoTemporaryFiles) {
  const std::string p = path("a.safetensors");
  write_safetensors(p, sample());
  SafeTensors second;
  second.tensors.push_back({"x", {1}, {9.0f}});
  write_safetensors(p, second);  // replaces the file
  EXPECT_EQ(read_safetensors(p).tensors.size(), 1u);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "a temporary file was left behind";
  try {
    write_safetensors(path("no/such/folder/a.safetensors"), second);
    ADD_FAILURE() << "wrote into a folder that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/folder/a.safetensors"), std::string::npos) << e.what();
  }
}

TEST_F(SafeTensorsTest, EveryTruncationIsAClearError) {
  write_safetensors(path("a.safetensors"), sample());
  std::ifstream in(path("a.safetensors"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t keep = 0; keep < bytes.size(); ++keep) {
    const std::string p = path("t.safetensors");
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
    // Cut inside the length or the header: it says so; inside the data: "truncated".
    expect_bad(p, keep < 8 ? "truncated" : keep < bytes.size() - 40 ? "header length" : "truncated");
  }
}

TEST_F(SafeTensorsTest, BadHeadersNameTheProblem) {
  expect_bad(path("missing.safetensors"), "no such file");
  expect_bad(raw("{\"a\": [", 0), "header: not valid JSON");
  expect_bad(raw("[1, 2]", 0), "not a JSON object");
  const std::string ok_shape = R"("shape": [2], "data_offsets": [0, 8])";
  expect_bad(raw(R"({"a": {"dtype": "Q7", )" + ok_shape + "}}", 8), "unknown dtype 'Q7'");
  expect_bad(raw(R"({"a": {"dtype": "F16", )" + ok_shape + "}}", 8), "dtype F16 is not supported");
  expect_bad(raw(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", 8), "'dtype' is missing");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8), "shape must be");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8), "data_offsets must be");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8), "run backwards");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4), "truncated");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8), "needs 12 bytes");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})", 8),
             "more than 2^60 elements");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12), "overlap");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8), "belong to no tensor");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8), "after the last tensor");
  expect_bad(raw(R"({"__metadata__": {"step": 5}})", 0), "'step' is not a string");
  // A header length far beyond the file.
  const std::string p = path("huge.safetensors");
  std::ofstream(p, std::ios::binary) << std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10);
  expect_bad(p, "header length");
}

TEST_F(SafeTensorsTest, RequireNamesTheTensorAndBothShapes) {
  write_safetensors(path("a.safetensors"), sample());
  const SafeTensors f = read_safetensors(path("a.safetensors"));
  EXPECT_EQ(f.require("fc.bias", {3}).data.size(), 3u);
  try {
    f.require("fc.bias", {4}, "model 'tiny'");
    ADD_FAILURE();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const char* s : {"a.safetensors", "fc.bias", "[3]", "[4]", "model 'tiny'"})
      EXPECT_NE(what.find(s), std::string::npos) << s << " not in: " << what;
  }
  try {
    f.require("conv2.weight", {1});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'conv2.weight' that the model needs is missing"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vdnn
