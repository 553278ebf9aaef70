// data/token_windows.h — language-model samples: windows of T + 1 tokens of one token sequence,
// read on demand (a SampleReader), as nanoGPT's get_batch cuts them.
//
// Model: the sequence is n token ids stored as little-endian uint16, two bytes each — nanoGPT's
// train.bin/val.bin layout (np.uint16 .tofile) — whatever holds the bytes: a mapped .bin file
// (data/token_file.h) or the ids of a text's characters (data/char_text.h). The window at offset o
// is tokens o .. o + T: its sample is ids o .. o + T - 1 (as exact floats), its T labels ids
// o + 1 .. o + T (each position's next token).
//   random (training): an epoch is floor(n / T) windows; the window at position p of epoch e starts
//     at Rng(seed, stream(e, p)).below(n - T), drawn from the Rng BatchLoader hands each sample
//     (data/batch_loader.h: seeded by the seed, the epoch and the position, so any thread count and
//     a resumed run give the same windows). As nanoGPT's torch.randint(len(data) - block_size, ...):
//     any offset, windows overlap, and an epoch reads about as many tokens as the sequence holds.
//   sequential (evaluation): floor((n - 1) / T) windows at offsets 0, T, 2T, ...: every next-token
//     prediction of the sequence once (but the tail's), the same every epoch.
// Every id read is checked: an id >= vocab throws naming the file and the id's byte offset in it.
//
//   auto file = std::make_shared<const MappedFile>("train.bin");
//   TokenSequence tokens{.bytes = file->bytes(), .owner = file, .file = file->path()};
//   auto windows = std::make_shared<const TokenWindows>(tokens, /*window=*/64, /*vocab=*/50257, /*random=*/true);
//   Dataset d = token_dataset(windows, "train.bin");   // d.count == windows->windows()
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "data/dataset.h"

namespace vdnn {

// Bytes of token ids, 2 per token (little-endian uint16), and what keeps them alive.
struct TokenSequence {
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> owner;  // a MappedFile, a vector of ids: whatever holds `bytes`
  std::string file;                   // named in errors
  int64_t first_byte = 0;             // the file offset of bytes[0] (a split after the file's start)

  int64_t tokens() const { return static_cast<int64_t>(bytes.size() / 2); }
  int64_t id(int64_t token) const {
    return bytes[static_cast<size_t>(2 * token)] | (bytes[static_cast<size_t>(2 * token + 1)] << 8);
  }
};

// Throws vdnn::Error naming the file and the byte offset of the first id in tokens [begin, end) of
// `s` that is not below vocab.
void check_token_ids(const TokenSequence& s, int64_t begin, int64_t end, int64_t vocab);

class TokenWindows : public SampleReader {
 public:
  // Throws vdnn::Error naming the file when the sequence holds fewer than window + 1 tokens, or
  // window or vocab is below 1.
  TokenWindows(TokenSequence tokens, int64_t window, int64_t vocab, bool random);

  int64_t windows() const;  // per epoch
  int64_t window() const { return window_; }
  int64_t vocab() const { return vocab_; }
  const TokenSequence& sequence() const { return tokens_; }
  // The first token of the window read for `index` (draws from rng when random).
  int64_t offset(int64_t index, Rng& rng) const;

  // T ids as floats to dst, the next T ids to labels; `augment` must be empty (refused earlier).
  int64_t read(int64_t index, float* dst, int32_t* labels, const Augmentation& augment, Rng& rng) const override;
  bool draws_samples() const override { return random_; }

 private:
  TokenSequence tokens_;
  int64_t window_, vocab_;
  bool random_;
};

// The windows as a Dataset named `name`: count = windows(), channels = T (height = width = 1),
// labels_per_sample = T, classes = vocab, tokens = true, labels made by the reader.
Dataset token_dataset(std::shared_ptr<const TokenWindows> windows, std::string name);

}  // namespace vdnn
