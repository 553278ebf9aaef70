// data/synthetic.h — a deterministic, learnable stand-in for a real image dataset.
//
// Model: each of the `classes` classes has a fixed prototype image whose pixels are N(0, 1) draws
// from Rng(seed, 1). Sample i gets a label drawn uniformly from Rng(seed, 2) and its image is the
// class prototype plus N(0, 0.5^2) pixel noise from the same stream. Same arguments give
// bit-identical data on every machine; a small CNN (or even a linear model) can fit it, which makes
// it a quick end-to-end training check without downloading anything.
//
//   vdnn::Dataset d = vdnn::make_synthetic(/*count=*/1024, /*c=*/1, /*h=*/28, /*w=*/28,
//                                          /*classes=*/10, /*seed=*/42);
//   // d.images.size() == 1024 * 28 * 28; d.labels[i] in [0, 10); d.name == "synthetic"
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace vdnn {

inline constexpr float kSyntheticNoiseSigma = 0.5f;

// Throws vdnn::Error if any size is < 1, classes < 1, or the images would exceed 2^31 floats.
// `split` selects independent samples (labels and noise) over the same class prototypes, so a test
// split (split = 1) measures generalisation on the training split's (split = 0) classes.
Dataset make_synthetic(int64_t count, int64_t c, int64_t h, int64_t w, int classes, uint64_t seed, uint64_t split = 0);

// The same for a token model (a [T] token input, a loss per token): `count` windows of `window`
// token ids in [0, vocab), each sequence following one rule drawn from the seed (next = (a·id + b)
// mod vocab) with one token in ten replaced by a random one, labels the next ids (labels_per_sample
// = window). Throws vdnn::Error for sizes < 1, vocab < 2 or more than 2^31 tokens.
//   vdnn::Dataset t = vdnn::make_synthetic_tokens(/*count=*/64, /*window=*/256, /*vocab=*/65, 42);
//   // t.tokens; t.images.size() == 64 * 256 (ids as floats); t.labels.size() == 64 * 256
Dataset make_synthetic_tokens(int64_t count, int64_t window, int vocab, uint64_t seed, uint64_t split = 0);

}  // namespace vdnn
