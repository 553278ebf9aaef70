// GzipReader (util/gzip_reader.h) and MappedFile (util/mapped_file.h), under the in-memory entry
// points of the readers: plain bytes pass through, gzip is inflated member after member, and what
// is not gzip after the last member, corrupt data or a cut-short stream is said clearly.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "data/idx_file.h"
#include "error_of.h"
#include "util/gzip_reader.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_gzip_reader {

using Bytes = std::vector<uint8_t>;

// One gzip member holding `data` (zlib's compress2 with a gzip wrapper).
Bytes gzip(const Bytes& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&z, data.size()) + 32);
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Everything the reader gives, read in pieces of `piece` bytes.
Bytes read_all(GzipReader& in, size_t piece) {
  Bytes out;
  Bytes buf(piece);
  while (size_t got = in.read(buf.data(), piece)) out.insert(out.end(), buf.begin(), buf.begin() + got);
  return out;
}

using test::error_of;

Bytes counting(size_t n) {
  Bytes b(n);
  std::iota(b.begin(), b.end(), uint8_t{0});
  return b;
}

TEST(GzipReader, PlainBytesPassThrough) {
  const Bytes data = counting(1000);
  GzipReader in(data, "plain");
  EXPECT_EQ(read_all(in, 7), data);
  EXPECT_EQ(in.short_read_note(), "");
}

TEST(GzipReader, InflatesEveryMemberInPieces) {
  const Bytes a = counting(3000), b(5000, 42);
  const Bytes two = concat(gzip(a), gzip(b));
  for (size_t piece : {size_t{1}, size_t{13}, size_t{4096}, size_t{100000}}) {
    GzipReader in(two, "two.gz");
    EXPECT_EQ(read_all(in, piece), concat(a, b)) << piece;
    EXPECT_EQ(in.short_read_note(), "");
  }
}

TEST(GzipReader, RefusesWhatIsNotAMemberAfterTheStream) {
  const Bytes bytes = concat(gzip(counting(10)), {0, 0, 0});
  GzipReader in(bytes, "tail.gz");
  EXPECT_NE(error_of([&] { read_all(in, 64); })
                .find("tail.gz: corrupt or unreadable gzip data near decompressed "
                      "byte 10: 3 bytes after the end of the gzip stream"),
            std::string::npos);
}

TEST(GzipReader, CutShortAndCorruptStreams) {
  const Bytes whole = gzip(counting(4000));
  const Bytes cut(whole.begin(), whole.end() - 12);
  GzipReader short_in(cut, "cut.gz");
  EXPECT_LT(read_all(short_in, 512).size(), 4000u);
  EXPECT_NE(short_in.short_read_note().find("cut short"), std::string::npos);
  Bytes bad_crc = whole;
  bad_crc[bad_crc.size() - 6] ^= 1;
  GzipReader crc_in(bad_crc, "crc.gz");
  EXPECT_NE(error_of([&] { read_all(crc_in, 512); })
                .find("crc.gz: corrupt or unreadable gzip data near "
                      "decompressed byte 4000: incorrect data check"),
            std::string::npos);
}

TEST(MappedFile, MapsFilesAndRefusesTheRest) {
  const auto dir = std::filesystem::temp_directory_path() / ("vdnn_mapped_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string empty = (dir / "empty").string(), text = (dir / "text").string();
  std::ofstream(empty).close();
  std::ofstream(text) << "hello";
  EXPECT_EQ(MappedFile(empty).bytes().size(), 0u);
  EXPECT_EQ(MappedFile(text).text(), "hello");
  EXPECT_NE(error_of([&] { MappedFile m(dir.string()); }).find("is a folder, not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { MappedFile m((dir / "nope").string()); }).find("nope: does not exist"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// procfs files read as size 0 but hold bytes: they are read, not taken as empty (they were: a JSON
// reader then said "unexpected end of input" of /proc/version).
TEST(MappedFile, ReadsAKernelFileWhoseSizeReadsAsZero) {
  ASSERT_EQ(std::filesystem::file_size("/proc/self/status"), 0u);
  const MappedFile status("/proc/self/status");
  EXPECT_EQ(status.text().rfind("Name:", 0), 0u) << status.text();
  EXPECT_NE(status.text().find("\nPid:"), std::string::npos);
}

TEST(ParseIdx, ReadsTheSameBytesAsAFile) {
  const Bytes idx = concat({0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3}, counting(6));
  for (const Bytes& bytes : {idx, gzip(idx)}) {
    const IdxArray a = parse_idx(bytes, "mem");
    EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a.data, counting(6));
  }
  EXPECT_NE(error_of([&] { parse_idx(Bytes{0, 0, 8}, "mem"); }).find("mem: truncated"), std::string::npos);
}

}  // namespace test_gzip_reader
}  // namespace vdnn
