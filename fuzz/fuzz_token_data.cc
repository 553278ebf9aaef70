// fuzz/fuzz_token_data.cc — bytes -> token data: nanoGPT's .bin (parse_token_bytes, what
// load_token_file runs on the mapped file) and UTF-8 text as characters (parse_char_text), then
// every window of each read as the loader reads it (`vdnn train --data FILE.bin|FILE.txt`).
// The first byte picks the window T (1..32), the second the vocabulary (1..256, or 65536).
//
//   build-fuzz/fuzz/fuzz_token_data /tmp/new-inputs fuzz/corpus/token_data
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include <memory>
#include <string_view>
#include <vector>

#include "data/char_text.h"
#include "data/token_file.h"
#include "fuzz/expect_vdnn_error.h"
#include "vdnn/rng.h"

namespace {

void read_every_window(const vdnn::Dataset& d) {
  std::vector<float> sample(static_cast<size_t>(d.channels));
  std::vector<int32_t> labels(static_cast<size_t>(d.labels_per_sample));
  vdnn::Rng rng(1);
  for (int64_t i = 0; i < d.count; ++i) d.reader->read(i, sample.data(), labels.data(), {}, rng);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int64_t window = 1 + data[0] % 32;
  const int64_t vocab = data[1] == 0 ? 65536 : data[1];
  const std::span<const uint8_t> bytes(data + 2, size - 2);
  for (bool train : {true, false}) {
    vdnn::fuzz::expect_vdnn_error([&] {
      const vdnn::TokenFileOptions o{.window = window, .vocab = vocab, .train = train, .scan_bytes = 64};
      read_every_window(vdnn::parse_token_bytes({.bytes = bytes, .file = "fuzz.bin"}, o, "fuzz"));
    });
  }
  return vdnn::fuzz::expect_vdnn_error([&] {
    const vdnn::CharText text =
        vdnn::parse_char_text({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "fuzz.txt");
    if (text.vocabulary.empty() || text.ids.size() != static_cast<size_t>(2 * text.characters)) __builtin_trap();
  });
}
