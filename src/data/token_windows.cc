#include "data/token_windows.h"

#include <algorithm>
#include <limits>

#include "vdnn/error.h"

namespace vdnn {

void check_token_ids(const TokenSequence& s, int64_t begin, int64_t end, int64_t vocab) {
  if (vocab > std::numeric_limits<uint16_t>::max()) return;  // every uint16 id is below it
  int64_t largest = 0;
  for (int64_t t = begin; t < end; ++t)
    largest = std::max(largest, s.id(t));  // vectorizes; the search below only on failure
  if (largest < vocab) return;
  for (int64_t t = begin; t < end; ++t) {
    if (s.id(t) < vocab) continue;
    VDNN_THROW(s.file << ": token id " << s.id(t) << " at byte offset " << s.first_byte + 2 * t
                      << " is not below the vocabulary size " << vocab
                      << " (--vocab N: ids are 0..N-1, e.g. 50257 for GPT-2's tokenizer; nanoGPT's meta.pkl names "
                         "its vocab_size)");
  }
}

TokenWindows::TokenWindows(TokenSequence tokens, int64_t window, int64_t vocab, bool random)
    : tokens_(std::move(tokens)), window_(window), vocab_(vocab), random_(random) {
  if (window < 1) VDNN_THROW(tokens_.file << ": a window of " << window << " tokens; expected T >= 1");
  if (vocab < 1 || vocab > std::numeric_limits<int32_t>::max())
    VDNN_THROW(tokens_.file << ": a vocabulary of " << vocab << " tokens; expected 1 to "
                            << std::numeric_limits<int32_t>::max());
  if (tokens_.tokens() < window + 1)
    VDNN_THROW(tokens_.file << ": " << tokens_.tokens() << " tokens from byte offset " << tokens_.first_byte
                            << " to its end at " << tokens_.first_byte + 2 * tokens_.tokens() << ", fewer than the "
                            << window + 1 << " one window needs (T = " << window
                            << " inputs and the token after them)");
}

int64_t TokenWindows::windows() const {
  const int64_t n = tokens_.tokens();
  return random_ ? n / window_ : (n - 1) / window_;
}

int64_t TokenWindows::offset(int64_t index, Rng& rng) const {
  if (!random_) return index * window_;
  return static_cast<int64_t>(rng.below(static_cast<uint64_t>(tokens_.tokens() - window_)));
}

int64_t TokenWindows::read(int64_t index, float* dst, int32_t* labels, const Augmentation& augment, Rng& rng) const {
  VDNN_CHECK(!augment.any(), tokens_.file << ": token windows take no image augmentation");
  VDNN_CHECK(index >= 0 && index < windows(), tokens_.file << ": window " << index << " of " << windows());
  const int64_t o = offset(index, rng);
  check_token_ids(tokens_, o, o + window_ + 1, vocab_);
  for (int64_t j = 0; j < window_; ++j) {
    dst[j] = static_cast<float>(tokens_.id(o + j));
    labels[j] = static_cast<int32_t>(tokens_.id(o + j + 1));
  }
  return index;
}

Dataset token_dataset(std::shared_ptr<const TokenWindows> windows, std::string name) {
  Dataset d;
  d.count = windows->windows();
  d.channels = windows->window(), d.height = 1, d.width = 1;
  d.labels_per_sample = windows->window();
  d.classes = static_cast<int>(windows->vocab());
  d.tokens = true;
  d.name = std::move(name);
  d.reader = std::move(windows);
  return d;
}

}  // namespace vdnn
