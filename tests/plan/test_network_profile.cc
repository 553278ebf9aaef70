// Network profiles (data parallel, issue 19): the shipped ones load with their datasheet rates
// and say whether they cross the host link; a user's file that is wrong fails in one line naming
// the file and the field; an unknown name lists the known ones.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_of.h"
#include "plan/device_profile.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_network_profile {

namespace fs = std::filesystem;
using test::error_of;

TEST(NetworkProfile, EveryShippedProfileLoadsBelowItsSignallingRate) {
  EXPECT_EQ(network_profile_names(),
            (std::vector<std::string>{"ethernet-100g", "hdr-infiniband", "mpi-shared-memory", "nvlink-a100"}));
  for (const std::string& name : network_profile_names()) {
    SCOPED_TRACE(name);
    const NetworkProfile n = load_network_profile(name);
    EXPECT_EQ(n.name, name);
    EXPECT_FALSE(n.description.empty());
    if (n.theoretical_bytes_per_second > 0) EXPECT_LT(n.bytes_per_second, n.theoretical_bytes_per_second);
    EXPECT_GT(n.latency_seconds, 0.0);
    EXPECT_FALSE(n.sources.empty());
  }
  // Line rates: 100 Gb/s, 200 Gb/s, NVLink 3 x 12 = 600 GB/s both ways.
  EXPECT_DOUBLE_EQ(load_network_profile("ethernet-100g").theoretical_bytes_per_second, 100e9 / 8);
  EXPECT_DOUBLE_EQ(load_network_profile("hdr-infiniband").theoretical_bytes_per_second, 200e9 / 8);
  EXPECT_DOUBLE_EQ(load_network_profile("nvlink-a100").theoretical_bytes_per_second, 600e9 / 2);
  EXPECT_TRUE(load_network_profile("ethernet-100g").shares_host_link) << "a PCIe NIC";
  EXPECT_TRUE(load_network_profile("hdr-infiniband").shares_host_link) << "a PCIe HCA";
  EXPECT_FALSE(load_network_profile("nvlink-a100").shares_host_link) << "GPU to GPU";
  EXPECT_FALSE(load_network_profile("mpi-shared-memory").shares_host_link) << "one host's memory";
}

TEST(NetworkProfile, AnUnknownNameListsTheKnownOnes) {
  const std::string e = error_of([] { load_network_profile("omni-path"); });
  EXPECT_NE(e.find("unknown network profile 'omni-path'"), std::string::npos) << e;
  EXPECT_NE(e.find("hdr-infiniband"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(NetworkProfile, ABadFileNamesTheFileAndTheField) {
  const std::string ok = R"({"name": "n", "description": "d", "bytes_per_second": 1e9, "latency_seconds": 1e-6,
                            "shares_host_link": true})";
  EXPECT_TRUE(parse_network_profile(ok, "n.json").shares_host_link);
  const auto error = [](const std::string& text) {
    return error_of([&] { parse_network_profile(text, "my/net.json"); });
  };
  const std::string missing =
      error(R"({"name": "n", "description": "d", "bytes_per_second": 1e9, "latency_seconds": 0})");
  EXPECT_NE(missing.find("my/net.json: missing field 'shares_host_link'"), std::string::npos) << missing;
  const std::string type = error(R"({"name": "n", "description": "d", "bytes_per_second": 1e9, "latency_seconds": 0,
                                     "shares_host_link": "yes"})");
  EXPECT_NE(type.find("field 'shares_host_link' must be true or false"), std::string::npos) << type;
  const std::string zero = error(R"({"name": "n", "description": "d", "bytes_per_second": 0, "latency_seconds": 0,
                                     "shares_host_link": false})");
  EXPECT_NE(zero.find("field 'bytes_per_second' must be a rate per second in [1e3, 1e18]"), std::string::npos) << zero;
  const std::string typo = error(R"({"name": "n", "description": "d", "bytes_per_second": 1e9, "latency_seconds": 0,
                                     "shares_host_link": false, "latency": 1})");
  EXPECT_NE(typo.find("unknown field 'latency'"), std::string::npos) << typo;
  const std::string fast = error(R"({"name": "n", "description": "d", "bytes_per_second": 2e9,
                                     "theoretical_bytes_per_second": 1e9, "latency_seconds": 0, "shares_host_link": false})");
  EXPECT_NE(fast.find("exceeds 'theoretical_bytes_per_second'"), std::string::npos) << fast;
  for (const std::string& e : {missing, type, zero, typo, fast}) EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(NetworkProfile, AJsonPathLoads) {
  const fs::path dir = fs::temp_directory_path() / ("vdnn_net_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "mine.json";
  std::ofstream(file) << R"({"name": "mine", "description": "d", "bytes_per_second": 5e9, "latency_seconds": 2e-6,
                             "shares_host_link": false})";
  EXPECT_DOUBLE_EQ(load_network_profile(file.string()).bytes_per_second, 5e9);
  const std::string gone = error_of([&] { load_network_profile((dir / "gone.json").string()); });
  EXPECT_NE(gone.find("network profile file"), std::string::npos) << gone;
  fs::remove_all(dir);
}

}  // namespace test_network_profile
}  // namespace vdnn
