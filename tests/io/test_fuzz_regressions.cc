// What fuzzing the readers found (fuzz/, docs/reliability.md "Fuzzing"): each input once crashed a
// reader (an exception other than vdnn::Error, undefined behaviour, a stack overflow) or made it
// accept nonsense. Fed to the normal file reader, each must now be one clear vdnn::Error naming the
// file and the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "io/model_file.h"
#include "io/safetensors.h"
#include "plan/device_profile.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_fuzz_regressions {

namespace fs = std::filesystem;

class FuzzRegression : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("vdnn_fuzz_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& bytes) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  // Expects `read` to throw one line of vdnn::Error containing `path` and every fragment.
  static void expect_error(const std::string& path, const std::function<void()>& read,
                           std::initializer_list<std::string> fragments) {
    try {
      read();
      ADD_FAILURE() << "no error for " << path;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find(path), std::string::npos) << what;
      for (const std::string& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << f << " not in: " << what;
    }
  }

  void expect_model_error(const std::string& json, std::initializer_list<std::string> fragments) const {
    const std::string p = file("model.json", json);
    expect_error(
        p, [&] { load_model(p); }, fragments);
  }

  // A model with this input, these layers before a final fc + loss, and 4 classes.
  static std::string model(const std::string& input, const std::string& layers) {
    return R"({"input": )" + input + R"(, "classes": 4, "layers": [)" + layers +
           R"({"name": "fc", "type": "fc", "units": 4}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  }

  static std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

  fs::path dir_;
};

// fuzz_model_file, first seconds: model.value("name", ...) threw nlohmann's type_error 302.
TEST_F(FuzzRegression, ModelNameThatIsNotAString) {
  expect_model_error(R"({"name": ["x"], "input": [4], "classes": 4, "layers": []})",
                     {"field 'name': expected a string, got [\"x\"]"});
}

// fuzz_model_file, first seconds (and the same in every JSON reader): a number no double holds
// made nlohmann's parser throw out_of_range 406, which `catch (parse_error)` let escape.
TEST_F(FuzzRegression, NumberBeyondDoubleInEveryJsonReader) {
  expect_model_error(model("[1e400]", ""), {"not valid JSON", "number overflow"});
  const std::string link = file("link.json", R"({"name": "l", "description": "d", "bytes_per_second": 1e400,
                                                 "latency_seconds": 0})");
  expect_error(link, [&] { load_link_profile(link); }, {"not valid JSON", "number overflow"});
  const std::string header = R"({"a": {"dtype": "F32", "shape": [1e999], "data_offsets": [0, 4]}})";
  const std::string st = file("x.safetensors", std::string(1, static_cast<char>(header.size())) + std::string(7, '\0') +
                                                   header + std::string(4, '\0'));
  expect_error(st, [&] { read_safetensors(st); }, {"header: not valid JSON", "number overflow"});
}

// Review of the fuzz target, confirmed by UBSan in build-fuzz: shape arithmetic overflowed int64_t
// (input elements, H + 2 * pad, the weight's fan-in), and classes above 2^31 wrapped silently.
TEST_F(FuzzRegression, SizesThatWouldOverflow) {
  expect_model_error(model("[3, 4611686018427387904, 4611686018427387904]", ""),
                     {"field 'input': expected [C, H, W] or [K] of integers in [1, 2147483648]"});
  expect_model_error(model("[2, 262144, 262144]", ""), {"input 2x262144x262144 has more than 2^36 elements"});
  expect_model_error(model("[3, 8, 8]", R"({"name": "c", "type": "conv", "channels": 4, "kernel": 3,
                                              "pad": 4611686018427387904},)"),
                     {"layer 'c'", "field 'pad': expected an integer in [0, 2147483647]"});
  expect_model_error(model("[2147483647, 1, 1]", R"({"name": "c", "type": "conv", "channels": 2147483647,
                                                       "kernel": 1},)"),
                     {"'c'", "weight 2147483647x2147483647x1x1 has more than 2^36 elements"});
  expect_model_error(model("[1, 65536, 65536]", R"({"name": "c", "type": "conv", "channels": 64, "kernel": 1},)"),
                     {"'c'", "output 64x65536x65536 has more than 2^36 elements per sample"});
  expect_model_error(R"({"input": [3, 8, 8], "classes": 4, "layers": [{"name": "fc", "type": "fc",
                          "units": 2147483647}, {"name": "loss", "type": "softmax_cross_entropy"}]})",
                     {"'fc'", "weight 2147483647x3x8x8 has more than 2^36 elements"});
  expect_model_error(R"({"input": [4], "classes": 4294967300, "layers": []})",
                     {"field 'classes': expected an integer in [2, 1048576] (as --classes), got 4294967300"});
}

// Review of the fuzz target, confirmed by AddressSanitizer: parsing is iterative, but printing a
// value in an error message recursed once per level, and 100000 nested brackets overflowed the stack.
TEST_F(FuzzRegression, DeepNestingInEveryJsonReader) {
  expect_model_error(model(nested(100000), ""), {"JSON nested deeper than 64 levels"});
  const std::string header = R"({"a": )" + nested(100000) + "}";
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  const std::string st = file("deep.safetensors", length + header);
  expect_error(st, [&] { read_safetensors(st); }, {"nested deeper than 64 levels"});
  const std::string device = file("deep-device.json", R"({"name": )" + nested(100000) + "}");
  expect_error(device, [&] { load_device_profile(device); }, {"nested deeper than 64 levels"});
}

// Review of the profile target: memory_bytes 1e300 went through llround's out-of-range result and
// became 2^63 bytes.
TEST_F(FuzzRegression, DeviceMemoryBeyondAnyDevice) {
  std::ifstream in(profiles_dir() + "/devices/h100.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"memory_bytes\": ";
  const size_t at = text.find(key) + key.size();
  text.replace(at, text.find(',', at) - at, "1e300");
  const std::string p = file("huge.json", text);
  expect_error(p, [&] { load_device_profile(p); },
               {"field 'memory_bytes' must be a byte count in [1, 2^60], got 1e+300"});
}

}  // namespace test_fuzz_regressions
}  // namespace vdnn
