// The readers under hostile input (issue 15): a safetensors header with 100,000 entries (minutes
// before: the JSON depth check ran as nlohmann's callback, which rescans an object at each member),
// text files that are devices or too large, link figures that never finish a step, and the
// MemAvailable figure the cpu budget check reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "device/cpu_device.h"
#include "error_of.h"
#include "io/json_text.h"
#include "io/safetensors.h"
#include "util/host_memory.h"
#include "util/text_file.h"

namespace test_hostile_readers {

namespace fs = std::filesystem;
using vdnn::test::error_of;

// A safetensors file's bytes with `n` one-float tensors, or with the last one overlapping.
std::string many_tensors(int n, bool overlap_last) {
  std::string h = "{";
  for (int i = 0; i < n; ++i) {
    const int begin = overlap_last && i == n - 1 ? 4 * i - 2 : 4 * i;
    h += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"F32","shape":[1],"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(begin + 4) + "]}";
  }
  h += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  return bytes + h + std::string(4 * static_cast<size_t>(n), '\0');
}

double seconds_to_parse(const std::string& bytes, std::string* error) {
  const auto start = std::chrono::steady_clock::now();
  try {
    const vdnn::SafeTensors t =
        vdnn::parse_safetensors({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "many.safetensors");
    EXPECT_EQ(t.tensors.size(), 100000u);
  } catch (const vdnn::Error& e) {
    *error = e.what();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HostileReaders, SafetensorsHeaderWithOneHundredThousandEntriesIsLinear) {
  std::string error;
  // About 0.3 s on the 2-core build machine (minutes before); 10 s leaves room for sanitizers.
  EXPECT_LT(seconds_to_parse(many_tensors(100000, false), &error), 10.0);
  EXPECT_EQ(error, "");
  EXPECT_LT(seconds_to_parse(many_tensors(100000, true), &error), 10.0);
  EXPECT_NE(error.find("tensors 't99998' and 't99999' overlap"), std::string::npos) << error;
}

TEST(HostileReaders, JsonDepthScanSkipsStringsAndStillRefusesDeepNesting) {
  const std::string brackets(200, '[');
  EXPECT_EQ(vdnn::parse_json_text(R"({"a": ")" + brackets + R"(\"["})", "s")["a"], brackets + "\"[");
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_NE(error_of([&] { vdnn::parse_json_text(deep, "d"); }).find("d: JSON nested deeper than 64 levels"),
            std::string::npos);
  EXPECT_NO_THROW(vdnn::parse_json_text(std::string(64, '[') + std::string(64, ']'), "ok"));
  EXPECT_NE(error_of([&] {
              vdnn::parse_json_text("[1, 2]", "big.json", 4);
            }).find("big.json: 6 bytes of JSON, above the 0 MiB limit"),
            std::string::npos);
}

TEST(HostileReaders, TextFilesMustBeRegularAndBounded) {
  // Was (as NetworkCosts::load's stream): /dev/zero read forever while memory grew.
  EXPECT_EQ(error_of([] { vdnn::read_text_file("/dev/zero"); }),
            "/dev/zero: is a character device, not a regular file");
  const fs::path p = fs::temp_directory_path() / ("vdnn_hostile_text_" + std::to_string(getpid()));
  std::ofstream(p) << std::string(3 << 20, ' ');
  EXPECT_EQ(error_of([&] { vdnn::read_text_file(p.string(), size_t{2} << 20); }),
            p.string() + ": 3145728 bytes, above the 2 MiB limit for a text file (vdnn's JSON files are far smaller)");
  EXPECT_EQ(vdnn::read_text_file(p.string()).size(), size_t{3} << 20);
  fs::remove(p);
}

TEST(HostileReaders, LinkFiguresThatNeverFinishAStepAreRefused) {
  EXPECT_NE(error_of([] { vdnn::parse_link("1e-9", "0"); }).find("at least 0.001 GB/s"), std::string::npos);
  EXPECT_NE(error_of([] { vdnn::parse_link("0", "1000s"); }).find("give 0 to 1s"), std::string::npos);
  EXPECT_NE(error_of([] { vdnn::parse_link("0", "1001ms"); }).find("--link-latency: 1001ms per copy"),
            std::string::npos);
  const vdnn::LinkModel edge = vdnn::parse_link("0.001", "1s");
  EXPECT_EQ(edge.bandwidth_bytes_per_second, 1e6);
  EXPECT_EQ(edge.latency_seconds, 1.0);
}

TEST(HostileReaders, AvailableHostMemoryReadsMemAvailable) {
  const fs::path p = fs::temp_directory_path() / ("vdnn_meminfo_" + std::to_string(getpid()));
  std::ofstream(p) << "MemTotal:       16000000 kB\nMemFree:          100 kB\nMemAvailable:    2048 kB\n";
  EXPECT_EQ(vdnn::available_host_memory(p.string()), 2048u * 1024);
  std::ofstream(p) << "MemTotal:       16000000 kB\n";
  EXPECT_EQ(vdnn::available_host_memory(p.string()), 0u);
  fs::remove(p);
  EXPECT_GT(vdnn::available_host_memory(), 0u);  // Linux has it
}

}  // namespace test_hostile_readers
