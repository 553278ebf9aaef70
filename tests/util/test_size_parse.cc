// Tests for util/size_parse: units, fractions, whitespace, overflow, errors, format_bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_size_parse {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kTiB = size_t{1} << 40;

TEST(ParseSize, AcceptsUnitsAndFractions) {
  const std::pair<const char*, size_t> cases[] = {
      {"512MiB", 512 * kMiB},
      {"12GiB", 12 * kGiB},
      {"1.5GB", 1500000000},
      {"1000000", 1000000},
      {"64KiB", 64 * kKiB},
      {"2G", 2 * kGiB},
      {"3M", 3 * kMiB},
      {"7K", 7 * kKiB},
      {"1T", kTiB},
      {"2TiB", 2 * kTiB},
      {"5KB", 5000},
      {"5MB", 5000000},
      {"1TB", 1000000000000},
      {"100B", 100},
      {"0", 0},
      {"0.5GiB", kGiB / 2},
      {"1.5KiB", 1536},
      {"0.1KiB", 102},  // 102.4 rounded down
      {"512mib", 512 * kMiB},
      {"  12 GiB  ", 12 * kGiB},
      {"1.", 1},
      {"2.0", 2},
      {"18446744073709551615", std::numeric_limits<size_t>::max()},
      {"16777215.999999999999TiB", std::numeric_limits<size_t>::max() - 1},  // 2^64 - 1.1, floored
  };
  for (const auto& [text, bytes] : cases) {
    EXPECT_EQ(parse_size(text, "--device-memory"), bytes) << text;
  }
}

TEST(ParseSize, RejectsWithOneLineNamingFlagAndExamples) {
  for (const char* bad : {"", "-1", "-512MiB", "abc", "12XB", "1.5", "GiB", "+5", "1.5.3", "18446744073709551616",
                          "20000000000GiB", "16777216TiB", "1e9", "12 G i B", "0x10"}) {
    try {
      const size_t value = parse_size(bad, "--host-memory");
      ADD_FAILURE() << "accepted '" << bad << "' as " << value;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--host-memory: ", 0), 0u) << what;
      EXPECT_NE(what.find("512MiB"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(ParseSize, SaysWhyWhenItCan) {
  try {
    parse_size("-1GiB", "--device-memory");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
  try {
    parse_size("99999999999GiB", "--device-memory");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
}

TEST(FormatBytes, UsesBinaryUnitsWithTwoDecimals) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(64 * kKiB), "64.00 KiB");
  EXPECT_EQ(format_bytes(3 * kGiB / 2), "1.50 GiB");
  EXPECT_EQ(format_bytes(512 * kMiB), "512.00 MiB");
  EXPECT_EQ(format_bytes(kMiB - 1), "1.00 MiB");  // not "1024.00 KiB"
  EXPECT_EQ(format_bytes(2 * kTiB), "2.00 TiB");
  EXPECT_EQ(parse_size("1.50GiB", "--x"), 3 * kGiB / 2);
}

}  // namespace test_size_parse
}  // namespace vdnn
