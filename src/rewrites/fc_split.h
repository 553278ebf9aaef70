// rewrites/fc_split.h — a fully connected layer too wide for a weight budget, cut into column blocks.
//
// Model: an fc layer y = W x + b with W of units x inputs computes each output unit from its own
// row of W (and entry of b), so any contiguous range of units is an fc layer of its own over the
// same input. Every fc whose parameters (weight and bias: 4 bytes a float) take more than
// `max_block_bytes` becomes k fc layers "<name>_block<j>" (j = 0..k-1) over its input, block j
// computing a contiguous range of the units (sizes as even as possible: the first units % k
// blocks one unit more), followed by a concat named "<name>" that joins them in order — so the
// value keeps its name, shape and readers, and the outputs are the same floats (each unit's dot
// product is computed the same way, up to the kernel's summation order: bit-identical on oneDNN
// in tests/rewrites/test_fc_split.cc). k is the fewest blocks in which each block's parameters fit:
// ceil(units / floor(max_block_bytes / bytes per unit)), which is ceil(parameter bytes /
// max_block_bytes) when the units divide evenly. The blocks keep the layer's settings (bias or
// not). An fc that fits is left as it is (its tensors are not looked at).
// Weights: "<name>.weight" (units x inputs, in its plain dims or the file's shape, as
// runtime/checkpoint.h's load_weights takes it) is cut into row blocks "<name>_block<j>.weight"
// in the same form, "<name>.bias" into "<name>_block<j>.bias", in the original's place in the
// file; the originals go, and so do their ":momentum" tensors (a checkpoint's) and the metadata's
// weights_sha256, which the blocks' order no longer hashes to (each noted). Check the hash before
// splitting (runtime/checkpoint.h check_weights).
// Memory: a tensor is cut from its last block to its first, each block copied out and then given
// back from the original (Linux: its pages released in place), whose first rows become block 0
// without a copy; so the transient peak is the weights plus one block (VGG-16's fc6 in blocks of
// 98 MiB: 532 -> 630 MiB, not the 924 MiB of holding fc6 twice), and afterwards they take what
// they took before. (Elsewhere than Linux a tensor is held nearly twice until its blocks are cut.)
// Everything is checked before anything changes: max_block_bytes == 0, a unit's parameters alone
// over max_block_bytes, more blocks than a concat takes (64), a name "<name>_block<j>" already
// taken, a weight or bias missing or misshapen — each throws vdnn::Error naming the layer (and the
// weights file and tensor with the expected shape) and leaves graph and weights as they were.
// The graph is rebuilt (it is append-only) in the same order, finalized: build the Net from it
// afterwards.
//
//   Graph graph = load_model("vgg16");
//   SafeTensors weights = read_weights_file("vgg16.safetensors");  // runtime/checkpoint.h
//   check_weights(weights, graph);                                 // before the hash goes
//   FcSplit s = split_wide_fc(graph, weights, 128 << 20);          // fc6: 4 blocks of 1024 units
//   Graph plan = load_model("vgg16");
//   split_wide_fc(plan, streaming_block_bytes(plan));              // a plan's graph: fc6 in 6 blocks
//   Net net(std::move(graph), {.batch = 1, .inference = true});
//   load_weights(std::move(weights), net);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/graph.h"
#include "io/safetensors.h"

namespace vdnn {

struct FcSplit {
  int layers_split = 0;            // fc layers cut into blocks
  int blocks = 0;                  // the fc layers that replaced them, all together
  std::vector<std::string> notes;  // a line per layer split (units, blocks, bytes), per dropped kind
};

// Cuts every fc layer of `graph` whose weight and bias take more than `max_block_bytes` into
// column blocks joined by a concat under its name, and its tensors in `weights` to match.
// Throws vdnn::Error (graph and weights unchanged) as described above.
FcSplit split_wide_fc(Graph& graph, SafeTensors& weights, size_t max_block_bytes);
// The graph alone, for a plan (`vdnn plan --inference`): the same layers, no weights to cut.
FcSplit split_wide_fc(Graph& graph, size_t max_block_bytes);

// The block size `vdnn infer` and `vdnn plan --inference` cut wide fc layers to under a budget: an
// eighth of the model's weights (fp32), or one output unit of the widest fc when that is more (a
// head of a few units holding most of the weights stays whole rather than failing to cut). A rule of the model alone,
// not of the budget, so the smallest budget a refusal names runs the same graph; streamed, a layer's weights then come
// a block at a time, not the whole layer beside the next one (VGG-16: fc6's 392 MiB in 6 blocks).
size_t streaming_block_bytes(const Graph& graph);

}  // namespace vdnn
