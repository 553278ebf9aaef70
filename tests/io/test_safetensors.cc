// safetensors: a file written by vdnn reads back bit-identically, writes are atomic, and every
// kind of bad file gives one line naming the file and the problem (never a crash).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
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
namespace test_safetensors {

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
    return raw_data(header, std::string(data_bytes, '\0'), name);
  }
  // The same with these data bytes.
  std::string raw_data(const std::string& header, const std::string& data,
                       const std::string& name = "raw.safetensors") {
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << header << data;
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
    f.tensors.push_back({"conv1.weight",
                         {2, 1, 3},
                         {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
                          nan_payload, 3e38f}});
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
  expect_bad(path("missing.safetensors"), "does not exist");
  expect_bad(raw("{\"a\": [", 0), "header: not valid JSON");
  expect_bad(raw("[1, 2]", 0), "not a JSON object");
  const std::string ok_shape = R"("shape": [2], "data_offsets": [0, 8])";
  expect_bad(raw(R"({"a": {"dtype": "Q7", )" + ok_shape + "}}", 8), "unknown dtype 'Q7'");
  expect_bad(raw(R"({"a": {"dtype": "BOOL", )" + ok_shape + "}}", 8), "dtype BOOL is not supported");
  expect_bad(raw(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", 8), "'dtype' is missing");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8), "shape must be");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8), "data_offsets must be");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8), "run backwards");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4), "truncated");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8), "needs 12 bytes");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})", 8),
             "more than 2^60 elements");
  expect_bad(raw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                 12),
             "overlap");
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

// Little-endian bytes of `count` values of `bytes` bytes each.
template <typename T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    const auto bits = std::bit_cast<std::array<char, sizeof(T)>>(v);  // the host is little-endian
    out.append(bits.data(), bits.size());
  }
  return out;
}

// F16 and BF16 widen exactly; every value is checked against its definition, not a run.
TEST_F(SafeTensorsTest, HalfAndBfloat16ReadExactly) {
  const std::string file = raw_data(
      R"({"h": {"dtype": "F16", "shape": [11], "data_offsets": [0, 22]},
          "b": {"dtype": "BF16", "shape": [5], "data_offsets": [22, 32]}})",
      le_bytes<uint16_t>({0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x3555, 0x8000, 0x7c00, 0xfc00, 0x7e00}) +
          le_bytes<uint16_t>({0x3f80, 0xbf00, 0x4049, 0x0001, 0xff80}));
  const SafeTensors f = read_safetensors(file);
  const std::vector<float>& h = f.find("h")->data;
  ASSERT_EQ(h.size(), 11u);
  EXPECT_EQ(f.find("h")->dtype, "F16");
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);                              // the largest half
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));                 // the smallest subnormal half
  EXPECT_EQ(h[4], std::ldexp(1023.0f, -24));              // the largest subnormal half
  EXPECT_EQ(h[5], std::ldexp(1.0f, -14));                 // the smallest normal half
  EXPECT_EQ(h[6], 1365.0f / 4096.0f);                     // 1.0101010101b * 2^-2, nearest half to 1/3
  EXPECT_EQ(std::bit_cast<uint32_t>(h[7]), 0x80000000u);  // -0
  EXPECT_EQ(h[8], std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[9], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(h[10]));
  const std::vector<float>& b = f.find("b")->data;
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -0.5f);
  EXPECT_EQ(b[2], 3.140625f);               // 0x4049: 1.1001001b * 2
  EXPECT_EQ(b[3], std::ldexp(1.0f, -133));  // the smallest subnormal bfloat16
  EXPECT_EQ(b[4], -std::numeric_limits<float>::infinity());
}

// F64 rounds to the nearest float, ties to even; beyond float's range is an error, not an Inf.
TEST_F(SafeTensorsTest, DoublesRoundToTheNearestFloat) {
  const double tie = 1.0 + std::ldexp(1.0, -24);  // half-way between 1 and the next float
  const std::string file = raw_data(
      R"({"d": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 48]}})",
      le_bytes<double>({0.1, tie, tie + std::ldexp(1.0, -40), -0.0, 1e-50, -std::numeric_limits<double>::infinity()}));
  const SafeTensors f = read_safetensors(file);
  const std::vector<float>& d = f.find("d")->data;
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d[0], 0.1f);
  EXPECT_EQ(d[1], 1.0f);                          // the tie goes to the even mantissa
  EXPECT_EQ(d[2], 1.0f + std::ldexp(1.0f, -23));  // just above the tie: up
  EXPECT_EQ(std::bit_cast<uint32_t>(d[3]), 0x80000000u);
  EXPECT_EQ(d[4], 0.0f);  // below float's smallest subnormal
  EXPECT_EQ(d[5], -std::numeric_limits<float>::infinity());
  expect_bad(raw_data(R"({"big": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", le_bytes<double>({1e300})),
             "tensor 'big' element 0 is 1e+300, beyond the range of float");
  expect_bad(raw(R"({"d": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}})", 8), "needs 16 bytes of F64");
}

// Integer tensors are refused, naming file, tensor and dtype, unless the caller takes them.
TEST_F(SafeTensorsTest, IntegersOnlyWhereTheCallerTakesThem) {
  const std::string file = raw_data(
      R"({"bn1.num_batches_tracked": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]},
          "i": {"dtype": "I32", "shape": [2], "data_offsets": [8, 16]},
          "u": {"dtype": "U8", "shape": [1], "data_offsets": [16, 17]}})",
      le_bytes<int64_t>({1234567890123}) + le_bytes<int32_t>({-5, 7}) + le_bytes<uint8_t>({255}));
  try {
    read_safetensors(file);
    ADD_FAILURE() << "an I64 tensor was read without being asked for";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const char* s : {"raw.safetensors", "tensor 'bn1.num_batches_tracked'", "dtype I64", "F32, F16, BF16 or F64"})
      EXPECT_NE(what.find(s), std::string::npos) << s << " not in: " << what;
  }
  const SafeTensors f = read_safetensors(file, {.accept_integer = [](const std::string&) { return true; }});
  const SafeTensor* n = f.find("bn1.num_batches_tracked");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->is_integer());
  EXPECT_TRUE(n->data.empty());
  EXPECT_EQ(n->integers, std::vector<int64_t>{1234567890123});
  EXPECT_EQ(f.find("i")->integers, (std::vector<int64_t>{-5, 7}));  // sign-extended
  EXPECT_EQ(f.find("u")->integers, std::vector<int64_t>{255});      // zero-extended
  try {
    f.require("bn1.num_batches_tracked", {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has dtype I64 (integers) but the model needs floating-point"),
              std::string::npos)
        << e.what();
  }
  const SafeTensorsReadOptions only_u{.accept_integer = [](const std::string& name) { return name == "u"; }};
  try {
    read_safetensors(file, only_u);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'bn1.num_batches_tracked'"), std::string::npos) << e.what();
  }
  const SafeTensorsReadOptions all{.accept_integer = [](const std::string&) { return true; }};
  const std::string too_big = raw_data(R"({"n": {"dtype": "U64", "shape": [1], "data_offsets": [0, 8]}})",
                                       le_bytes<uint64_t>({uint64_t{1} << 63}), "u64.safetensors");
  try {
    read_safetensors(too_big, all);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the int64 range"), std::string::npos) << e.what();
  }
}

// vdnn writes integer tensors as I64 scalars or arrays, and reads them back exactly.
TEST_F(SafeTensorsTest, IntegerTensorsRoundTripAsI64) {
  SafeTensors f;
  f.tensors.push_back({"bn1.weight", {2}, {0.5f, -1.0f}});
  f.tensors.push_back({"bn1.num_batches_tracked", {}, {}, "I64", {int64_t{1} << 40}});
  f.tensors.push_back({"counts", {2}, {}, "I64", {-3, INT64_MAX}});
  write_safetensors(path("i.safetensors"), f);
  std::ifstream in(path("i.safetensors"), std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, ' ');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const nlohmann::json h = nlohmann::json::parse(header);
  EXPECT_EQ(h["bn1.num_batches_tracked"]["dtype"], "I64");
  EXPECT_EQ(h["bn1.num_batches_tracked"]["shape"], nlohmann::json::array());
  EXPECT_EQ(h["bn1.num_batches_tracked"]["data_offsets"], (nlohmann::json{8, 16}));
  EXPECT_EQ(h["counts"]["data_offsets"], (nlohmann::json{16, 32}));
  const SafeTensors g =
      read_safetensors(path("i.safetensors"), {.accept_integer = [](const std::string&) { return true; }});
  EXPECT_EQ(g.find("bn1.weight")->data, (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(g.find("bn1.num_batches_tracked")->integers, std::vector<int64_t>{int64_t{1} << 40});
  EXPECT_EQ(g.find("counts")->integers, (std::vector<int64_t>{-3, INT64_MAX}));
}

}  // namespace test_safetensors
}  // namespace vdnn
