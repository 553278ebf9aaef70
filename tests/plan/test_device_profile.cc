// Device and link profiles: every shipped file loads with the datasheet figures; a user's file that
// is wrong in any way fails in one line naming the file and the field; names resolve in
// $VDNN_PROFILES_DIR when it is set.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "error_of.h"
#include "plan/conv_algorithms.h"
#include "plan/device_profile.h"
#include "scoped_env.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_device_profile {

namespace fs = std::filesystem;
using nlohmann::json;

using test::error_of;
using test::ScopedEnv;

TEST(DeviceProfile, EveryShippedProfileLoads) {
  const std::vector<std::string> expected = {
      "a100-40gb", "a100-80gb", "h100",      "h200",      "jetson-orin-nano", "rtx-3060", "rtx-4090",
      "titan-x-maxwell", "titan-x-maxwell-cudnn4", "v100-16gb", "v100-32gb"};
  EXPECT_EQ(device_profile_names(), expected);
  for (const std::string& name : device_profile_names()) {
    SCOPED_TRACE(name);
    const DeviceProfile d = load_device_profile(name);
    const bool edge = name == "jetson-orin-nano";  // an edge device: inference (`vdnn plan --inference`)
    EXPECT_EQ(d.name, name);
    EXPECT_FALSE(d.description.empty());
    EXPECT_GE(d.memory_bytes, edge ? size_t{8} << 30 : size_t{12} << 30);
    EXPECT_GT(d.peak_fp32_flops, edge ? 1e12 : 6e12);
    EXPECT_GT(d.memory_bytes_per_second, edge ? 6e10 : 3e11);
    EXPECT_EQ(d.efficiency.conv.size(),
              d.conv_algorithms.empty() ? conv_algorithm_names().size() : d.conv_algorithms.size());
    EXPECT_FALSE(d.sources.empty());
    EXPECT_NO_THROW(load_link_profile(d.link));
    // bf16 tensor cores (Ampere and later, but the Jetson's figure is not published): dense bf16 runs
    // 2 to 16 times fp32 on these cards (the A100: 312 against 19.5 TFLOP/s).
    const bool has_bf16 = name.rfind("a100", 0) == 0 || name.rfind("h", 0) == 0 || name.rfind("rtx", 0) == 0;
    if (has_bf16) {
      EXPECT_GT(d.peak_bf16_flops, 1.9 * d.peak_fp32_flops);
      EXPECT_LE(d.peak_bf16_flops, 16 * d.peak_fp32_flops);
    } else {
      EXPECT_EQ(d.peak_bf16_flops, 0);
    }
  }
}

TEST(DeviceProfile, ThePapersGpuHasItsDatasheetFigures) {
  const DeviceProfile d = load_device_profile("titan-x-maxwell");
  EXPECT_EQ(d.memory_bytes, size_t{12} << 30);
  EXPECT_DOUBLE_EQ(d.peak_fp32_flops, 6.6e12);
  EXPECT_DOUBLE_EQ(d.memory_bytes_per_second, 336.5e9);
  EXPECT_EQ(d.link, "pcie3");
  EXPECT_EQ(load_device_profile("h200").memory_bytes, size_t{141} << 30);
  EXPECT_EQ(load_device_profile("a100-40gb").link, "pcie4");
  EXPECT_EQ(load_device_profile("h100").link, "pcie5");
}

TEST(DeviceProfile, TheCudnn4VariantIsThePapersGpuWithCudnn4sAlgorithms) {
  const DeviceProfile whole = load_device_profile("titan-x-maxwell");
  const DeviceProfile paper = load_device_profile("titan-x-maxwell-cudnn4");
  EXPECT_TRUE(whole.conv_algorithms.empty());
  EXPECT_TRUE(whole.offers("winograd_nonfused"));
  EXPECT_EQ(paper.conv_algorithms, (std::vector<std::string>{"implicit_gemm", "implicit_precomp_gemm", "gemm", "fft"}));
  EXPECT_FALSE(paper.offers("winograd"));
  EXPECT_FALSE(paper.offers("winograd_nonfused"));
  EXPECT_TRUE(paper.offers("fft"));
  EXPECT_EQ(paper.memory_bytes, whole.memory_bytes);
  EXPECT_EQ(paper.peak_fp32_flops, whole.peak_fp32_flops);
  EXPECT_EQ(paper.efficiency.conv.at("implicit_precomp_gemm"), whole.efficiency.conv.at("implicit_precomp_gemm"));
  EXPECT_EQ(paper.batch_efficiency.reference_batch, 256);
  EXPECT_EQ(paper.batch_efficiency.half_saturation_outputs, whole.batch_efficiency.half_saturation_outputs);
}

TEST(DeviceProfile, LinksAreFasterEachGenerationAndBelowTheirSignallingRate) {
  EXPECT_EQ(link_profile_names(), (std::vector<std::string>{"lpddr5-unified", "pcie3", "pcie4", "pcie5"}));
  const LinkProfile unified = load_link_profile("lpddr5-unified");  // an integrated GPU's copies
  EXPECT_LT(unified.bytes_per_second, unified.theoretical_bytes_per_second);
  EXPECT_GT(unified.latency_seconds, 0.0);
  double previous = 0;
  for (const std::string& name : {"pcie3", "pcie4", "pcie5"}) {
    SCOPED_TRACE(name);
    const LinkProfile l = load_link_profile(name);
    EXPECT_EQ(l.name, name);
    EXPECT_GT(l.bytes_per_second, previous);
    EXPECT_LT(l.bytes_per_second, l.theoretical_bytes_per_second);
    EXPECT_GT(l.latency_seconds, 0.0);
    previous = l.bytes_per_second;
  }
  EXPECT_DOUBLE_EQ(load_link_profile("pcie3").bytes_per_second, 12.8e9);
}

TEST(DeviceProfile, AnUnknownNameListsTheKnownOnes) {
  const std::string e = error_of([] { load_device_profile("titan-z"); });
  EXPECT_NE(e.find("unknown device profile 'titan-z'"), std::string::npos) << e;
  EXPECT_NE(e.find("titan-x-maxwell"), std::string::npos) << e;
  EXPECT_NE(e.find("h200"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  const std::string l = error_of([] { load_link_profile("nvlink"); });
  EXPECT_NE(l.find("unknown link profile 'nvlink' (known: lpddr5-unified, pcie3, pcie4, pcie5"), std::string::npos)
      << l;
  const std::string p = error_of([] { load_device_profile("no/such/gpu.json"); });
  EXPECT_NE(p.find("'no/such/gpu.json' does not exist"), std::string::npos) << p;
}

// Writes variants of the shipped Titan X profile (and of pcie3) into a fresh folder.
class DeviceProfileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vdnn_profiles_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ifstream(fs::path(profiles_dir()) / "devices/titan-x-maxwell.json") >> device_;
    std::ifstream(fs::path(profiles_dir()) / "links/pcie3.json") >> link_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }
  // The error loading a device file edited by `edit`; checks it names the file and is one line.
  std::string device_error(const std::function<void(json&)>& edit) {
    json j = device_;
    edit(j);
    const std::string path = write("gpu.json", j.dump(2));
    const std::string e = error_of([&] { load_device_profile(path); });
    EXPECT_EQ(e.rfind(path + ": ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    return e;
  }
  std::string link_error(const std::function<void(json&)>& edit) {
    json j = link_;
    edit(j);
    const std::string path = write("link.json", j.dump(2));
    const std::string e = error_of([&] { load_link_profile(path); });
    EXPECT_EQ(e.rfind(path + ": ", 0), 0u) << e;
    return e;
  }

  fs::path dir_;
  json device_, link_;
};

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST_F(DeviceProfileFiles, AnUneditedCopyLoadsFromItsPath) {
  const std::string path = write("copy.json", device_.dump());
  EXPECT_EQ(load_device_profile(path).name, "titan-x-maxwell");
}

TEST_F(DeviceProfileFiles, TextThatIsNotJsonIsNamed) {
  const std::string path = write("broken.json", "{\"name\": \"x\",");
  const std::string e = error_of([&] { load_device_profile(path); });
  EXPECT_CONTAINS(e, path + ": not valid JSON");
  EXPECT_CONTAINS(error_of([&] { load_device_profile(write("list.json", "[1, 2]")); }),
                  "the file must be a JSON object, got array");
}

TEST_F(DeviceProfileFiles, AMissingFieldIsNamed) {
  EXPECT_CONTAINS(device_error([](json& j) { j.erase("peak_fp32_flops"); }), "missing field 'peak_fp32_flops'");
  EXPECT_CONTAINS(device_error([](json& j) { j["efficiency"]["conv"].erase("winograd"); }),
                  "missing field 'efficiency.conv.winograd'");
  EXPECT_CONTAINS(link_error([](json& j) { j.erase("latency_seconds"); }), "missing field 'latency_seconds'");
}

TEST_F(DeviceProfileFiles, ANumberOutOfRangeOrOfTheWrongTypeIsNamed) {
  EXPECT_CONTAINS(device_error([](json& j) { j["memory_bytes_per_second"] = -336.5e9; }),
                  "field 'memory_bytes_per_second' must be a rate per second in [1e3, 1e18]");
  EXPECT_CONTAINS(
      device_error([](json& j) { j["peak_fp32_flops"] = "fast"; }),
      "field 'peak_fp32_flops' must be a rate per second in [1e3, 1e18] (plan/physical_limits.h), got \"fast\"");
  // The re-probe: finite but absurd figures made the step inf and the plan "-nan%" with exit 0.
  EXPECT_CONTAINS(device_error([](json& j) { j["kernel_launch_seconds"] = 1e308; }),
                  "field 'kernel_launch_seconds' must be seconds in [0, 1]");
  EXPECT_CONTAINS(device_error([](json& j) { j["peak_fp32_flops"] = 1e-308; }),
                  "field 'peak_fp32_flops' must be a rate");
  EXPECT_CONTAINS(device_error([](json& j) { j["memory_bytes_per_second"] = 1e-308; }),
                  "field 'memory_bytes_per_second' must be a rate");
  EXPECT_CONTAINS(device_error([](json& j) { j["efficiency"]["memory"] = 1.5; }),
                  "field 'efficiency.memory' must be a number in (0, 1], got 1.5");
  EXPECT_CONTAINS(device_error([](json& j) { j["efficiency"] = 0.5; }),
                  "field 'efficiency' must be a JSON object, got number");
  EXPECT_CONTAINS(device_error([](json& j) { j["sources"] = "datasheet"; }),
                  "field 'sources' must be an array of strings");
  EXPECT_CONTAINS(link_error([](json& j) { j["latency_seconds"] = -1e-6; }),
                  "field 'latency_seconds' must be seconds in [0, 1]");
  EXPECT_CONTAINS(link_error([](json& j) { j["bytes_per_second"] = 20e9; }),
                  "field 'bytes_per_second' (2e+10) exceeds 'theoretical_bytes_per_second'");
}

TEST_F(DeviceProfileFiles, AnUnknownFieldIsATypo) {
  const std::string top = device_error([](json& j) { j["peak_fp32_flop"] = 1e12; });
  EXPECT_CONTAINS(top,
                  "unknown field 'peak_fp32_flop' (valid: name, description, memory_bytes, peak_fp32_flops,"
                  " peak_bf16_flops, memory_bytes_per_second, host_memory_bytes_per_second, link, kernel_launch_seconds,"
                  " unified_memory, conv_algorithms,"
                  " efficiency, batch_efficiency, sources)");
  EXPECT_CONTAINS(link_error([](json& j) { j["speed"] = 1; }),
                  "(valid: name, description, bytes_per_second, theoretical_bytes_per_second, latency_seconds,"
                  " sources)");
  EXPECT_CONTAINS(device_error([](json& j) { j["efficiency"]["conv"]["direct"] = 0.5; }),
                  "unknown field 'efficiency.conv.direct' (valid: implicit_gemm, implicit_precomp_gemm");
  EXPECT_CONTAINS(link_error([](json& j) { j["duplex"] = true; }), "unknown field 'duplex'");
}

TEST_F(DeviceProfileFiles, AConvolutionAlgorithmSetNamesKnownAlgorithmsWithImplicitGemm) {
  EXPECT_CONTAINS(device_error([](json& j) {
                    j["conv_algorithms"] = {"implicit_gemm", "direct"};
                  }),
                  "field 'conv_algorithms': unknown algorithm 'direct' (valid: implicit_gemm, implicit_precomp_gemm");
  EXPECT_CONTAINS(device_error([](json& j) {
                    j["conv_algorithms"] = {"gemm", "fft"};
                  }),
                  "field 'conv_algorithms' must include implicit_gemm (the algorithm that applies to every "
                  "convolution), got gemm, fft");
  EXPECT_CONTAINS(device_error([](json& j) { j["conv_algorithms"] = json::array(); }),
                  "field 'conv_algorithms' must include implicit_gemm");
  EXPECT_CONTAINS(device_error([](json& j) {
                    j["conv_algorithms"] = {"implicit_gemm", "implicit_gemm"};
                  }),
                  "field 'conv_algorithms' must be a list of distinct algorithm names");
  // The efficiencies are those of the offered algorithms: one more is a typo, one fewer is missing.
  EXPECT_CONTAINS(device_error([](json& j) {
                    j["conv_algorithms"] = {"implicit_gemm", "fft"};
                  }),
                  "unknown field 'efficiency.conv.gemm' (valid: implicit_gemm, fft)");
  const std::string path = write("cudnn4.json", [&] {
    json j = device_;
    j["conv_algorithms"] = {"fft", "implicit_gemm"};
    for (const char* a : {"implicit_precomp_gemm", "gemm", "winograd", "winograd_nonfused"})
      j["efficiency"]["conv"].erase(a);
    return j.dump();
  }());
  EXPECT_EQ(load_device_profile(path).conv_algorithms, (std::vector<std::string>{"implicit_gemm", "fft"}));
}

TEST_F(DeviceProfileFiles, ABatchEfficiencyCurveIsChecked) {
  EXPECT_CONTAINS(device_error([](json& j) { j["batch_efficiency"]["reference_batch"] = 0; }),
                  "field 'batch_efficiency.reference_batch' must be a number > 0, got 0");
  EXPECT_CONTAINS(device_error([](json& j) { j["batch_efficiency"]["reference_batch"] = 2.5; }),
                  "field 'batch_efficiency.reference_batch' must be a whole number in [1, 1e9], got 2.5");
  EXPECT_CONTAINS(device_error([](json& j) { j["batch_efficiency"].erase("half_saturation_outputs"); }),
                  "missing field 'batch_efficiency.half_saturation_outputs'");
  EXPECT_CONTAINS(device_error([](json& j) { j["batch_efficiency"]["knee"] = 1; }),
                  "unknown field 'batch_efficiency.knee' (valid: reference_batch, half_saturation_outputs)");
  json flat = device_;
  flat.erase("batch_efficiency");  // optional: without it, no curve
  EXPECT_EQ(load_device_profile(write("flat.json", flat.dump())).batch_efficiency.reference_batch, 0);
}

TEST_F(DeviceProfileFiles, AnUnknownLinkListsTheKnownLinks) {
  EXPECT_CONTAINS(device_error([](json& j) { j["link"] = "pcie9"; }),
                  "field 'link': unknown link profile 'pcie9' (did you mean 'pcie3', 'pcie4' or 'pcie5'? known: "
                  "lpddr5-unified, pcie3, pcie4, pcie5");
}

TEST_F(DeviceProfileFiles, NamesResolveInTheFolderTheEnvironmentGives) {
  json d = device_;
  d["name"] = "my-gpu";
  d["link"] = "my-link";
  json l = link_;
  l["name"] = "my-link";
  write("devices/my-gpu.json", d.dump());
  write("links/my-link.json", l.dump());
  ScopedEnv env("VDNN_PROFILES_DIR", dir_.string());
  EXPECT_EQ(device_profile_names(), std::vector<std::string>{"my-gpu"});
  EXPECT_EQ(load_device_profile("my-gpu").link, "my-link");
  EXPECT_CONTAINS(error_of([] { load_device_profile("titan-x-maxwell"); }), "(known: my-gpu;");
}

}  // namespace test_device_profile
}  // namespace vdnn
