// Tests for util/sha256: FIPS 180-2 / NIST example vectors, chunking and padding boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "util/sha256.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_sha256 {

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FourHundredFortyEightBits) {
  const std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  ASSERT_EQ(m.size() * 8, 448u);
  EXPECT_EQ(sha256_hex(m.data(), m.size()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, EightHundredNinetySixBits) {
  const std::string m =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
      "pqrs"
      "mnopqrstnopqrstu";
  ASSERT_EQ(m.size() * 8, 896u);
  EXPECT_EQ(sha256_hex(m.data(), m.size()), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAInOddChunks) {
  const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million.data(), million.size()), expected);

  Sha256 h;
  const size_t chunks[] = {1, 3, 7, 63, 65, 127, 129, 997, 4093};
  size_t done = 0, k = 0;
  while (done < million.size()) {
    const size_t n = std::min(chunks[k++ % std::size(chunks)], million.size() - done);
    h.update(million.data() + done, n);
    done += n;
  }
  EXPECT_EQ(h.hex_digest(), expected);
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 55/56 and 64-byte block boundaries (reference digests from Python hashlib).
  const std::vector<std::pair<size_t, std::string>> cases = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
  };
  for (const auto& [len, hex] : cases) {
    const std::string m(len, 'a');
    EXPECT_EQ(sha256_hex(m.data(), m.size()), hex) << "length " << len;
    Sha256 bytewise;
    for (char c : m) bytewise.update(&c, 1);
    EXPECT_EQ(bytewise.hex_digest(), hex) << "length " << len << " fed byte by byte";
  }
}

TEST(Sha256, UpdateAfterDigestIsABug) {
  Sha256 h;
  h.update("x", 1);
  h.hex_digest();
  EXPECT_THROW(h.update("y", 1), InternalError);
  EXPECT_THROW(h.hex_digest(), InternalError);
}

}  // namespace test_sha256
}  // namespace vdnn
