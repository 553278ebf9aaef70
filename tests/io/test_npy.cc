// io/npy.h: float32 .npy files round-trip exactly, and anything else is one error naming the file.
// (NumPy itself reads what vdnn writes and writes what vdnn reads in tests/interop/test_onnx_export.cc.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "core/shape.h"
#include "error_of.h"
#include "io/npy.h"
#include "util/mapped_file.h"

namespace vdnn::test {
namespace test_npy {

namespace fs = std::filesystem;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A version 1.0 file with `header` (padded as NumPy pads it) and `data_bytes` bytes of data.
std::string npy(const std::string& header, size_t data_bytes) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(h.size() & 0xff);
  s += static_cast<char>(h.size() >> 8);
  return s + h + std::string(data_bytes, '\0');
}

TEST(Npy, RoundTripsFloat32Exactly) {
  const fs::path path = fs::temp_directory_path() / ("vdnn_npy_" + std::to_string(getpid()) + ".npy");
  const std::vector<float> values{1.5f, -0.0f, 3.4028235e38f, 1e-45f, 7.0f, -2.25f};
  write_npy(path.string(), {2, 3}, values);
  const NpyArray a = read_npy(path.string());
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(a.data.size(), values.size());
  EXPECT_EQ(std::memcmp(a.data.data(), values.data(), values.size() * sizeof(float)), 0);
  // The header is NumPy's: 64-byte aligned data (a 128-byte header here, as np.save writes it),
  // a one-element shape written "(6,)".
  EXPECT_EQ(MappedFile(path.string()).bytes().size(), 128 + values.size() * sizeof(float));
  write_npy(path.string(), {6}, values);
  EXPECT_NE(std::string(MappedFile(path.string()).text()).find("'shape': (6,)"), std::string::npos);
  EXPECT_EQ(read_npy(path.string()).shape, (std::vector<int64_t>{6}));
  fs::remove(path);
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // Written by np.save (NumPy 1.24): np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2), and float64.
  const NpyArray saved = read_npy(VDNN_SOURCE_DIR "/fuzz/corpus/npy/images-2x1x2x2.npy");
  EXPECT_EQ(saved.shape, (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(saved.data, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(read_npy(VDNN_SOURCE_DIR "/fuzz/corpus/npy/vector-3.npy").data, (std::vector<float>{1.5f, -2.0f, 0.0f}));
  const std::string e = error_of([] { read_npy(VDNN_SOURCE_DIR "/fuzz/corpus/npy/float64-refused.npy"); });
  EXPECT_NE(e.find("'<f8'"), std::string::npos) << e;
  const std::string s = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2, 2), }", 32);
  const NpyArray a = parse_npy(bytes_of(s), "x.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(a.data.size(), 8u);
}

TEST(Npy, AnythingElseIsOneErrorNamingTheFile) {
  const struct {
    std::string bytes, fragment;
  } cases[] = {
      {"PK\x03\x04 a zip file", "not a NumPy .npy file"},
      {npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16), "'<f8'"},
      {npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), "expected '<f4'"},
      {npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16), "Fortran order"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20),
       "needs 24 bytes of data, the file has 20"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 4), "too many"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8), "'shape' is malformed"},
      {npy("{'descr': '<f4', 'fortran_order': False}", 8), "no 'shape'"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8).substr(0, 40), "truncated"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { parse_npy(bytes_of(c.bytes), "in.npy"); });
    EXPECT_EQ(e.rfind("in.npy: ", 0), 0u) << e;
    EXPECT_NE(e.find(c.fragment), std::string::npos) << c.fragment << " not in: " << e;
  }
}

// A small stand-in for fuzz/fuzz_npy.cc that runs with the tests: every mutation of a valid file
// (bytes flipped, cut, header digits changed) gives an array or one vdnn::Error, nothing else.
TEST(Npy, MutatedFilesGiveAnArrayOrAnError) {
  const std::string seed = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
  std::mt19937 gen(3);
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(gen() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = gen() % s.size();
      switch (gen() % 3) {
        case 0:
          s[at] = static_cast<char>(gen());
          break;
        case 1:
          s[at] = "0123456789(), '"[gen() % 15];
          break;
        default:
          s.resize(at);
          break;
      }
      if (s.empty()) break;
    }
    try {
      const NpyArray a = parse_npy(bytes_of(s), "m.npy");
      EXPECT_EQ(static_cast<int64_t>(a.data.size()), elements_up_to(a.shape));
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);
}

}  // namespace test_npy
}  // namespace vdnn::test
