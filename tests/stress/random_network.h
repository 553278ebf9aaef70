// tests/stress/random_network.h — random DAG networks for the stress test, from a seed.
//
// Model: a network is a stem of random blocks on a small image (1–4 channels, 4–16 pixels a side),
// then a head (optional global pooling or flatten, optional hidden FC with ReLU and dropout, the
// classifier FC) and softmax cross-entropy. A block is one layer — convolution (random channels,
// kernel, stride, pad, groups, bias), batch norm, ReLU (in place where the graph allows), max or
// average pooling (random window, stride, pad, ceil, exclude_padding), LRN (odd size), dropout —
// or a join: 2–3 shape-preserving branches joined by concat or add (sometimes with the block's
// input as the identity branch), a long skip (add with an earlier value of the same shape, or
// concat with one of the same height and width), or a join of a value with itself.
// Most networks (78%) have 1–8 blocks; 7% have none or one join reading "data", so the head reads
// the input; 15% take a [K] input (1–32 elements, 60% of them as many as the classes): the loss
// alone on it (half of those), or 0–2 hidden layers (FC, ReLU, batch norm, dropout, add with an
// earlier value), where FCs, joins and the loss read "data". In a fifth of the networks the loss
// reads an add of the logits with the input, an earlier logit-sized value or another FC.
// Shapes are inferred by the real Graph as the network grows, so every generated model is valid.
// The same seed gives the same model on every machine (vdnn::Rng, not <random>).
//
//   RandomNetwork n = random_network(/*seed=*/42);
//   Graph g = parse_model(n.model, "stress seed 42");   // or save n.model.dump(2) and run
//   NetOptions o{.batch = n.batch};                     //   `vdnn train --model it.json`
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/graph.h"

namespace vdnn::stress {

struct RandomNetwork {
  uint64_t seed = 0;
  nlohmann::json model;  // a model file (io/model_file.h)
  int64_t batch = 1;     // a random batch size for it, 1..8
  Graph graph() const;
};

RandomNetwork random_network(uint64_t seed);

}  // namespace vdnn::stress
