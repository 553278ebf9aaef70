// rewrites/inference_rewrites.h — a trained graph and its weights rewritten for inference only.
//
// Model: two rewrites that leave the evaluation outputs as they were (up to float rounding):
//  - dropout is the identity at inference: each dropout layer goes, its readers read its input;
//  - a batch norm whose input is a conv or fc output that nothing else reads folds into that
//    layer: with s = gamma / sqrt(running_var + eps) per output channel,
//      W' = W * s (each output channel's slice),   b' = (b - running_mean) * s + beta
//    (computed in double, stored as float). A layer without bias gains one. The batch norm's value
//    disappears: its readers read the conv's output, which keeps its name, so weights still match
//    by "<layer>.<param>" (PyTorch's names).
// A batch norm that cannot fold stays, with a line in `notes` saying why: its input is the network
// input, or comes from another kind of layer (a join, a pool, another batch norm), or is also read
// by another layer. The graph is rebuilt (it is append-only) in the same order, finalized.
// The weights file changes to match: the folded layers' weight and bias replace theirs, the batch
// norms' tensors (running statistics, num_batches_tracked, a checkpoint's ":momentum") are removed,
// and the metadata's weights_sha256, which no longer holds, is removed too (noted).
// Graph and weights are checked and the new weights computed before anything changes: an error
// (a tensor missing or misshapen, running_var + eps <= 0) leaves both as they were. Wherever the
// graph changes, it is consumed and replaced, so build the Net from it afterwards.
//
// This sits in rewrites, with the other graph rewrites (rewrites/fc_split.h, rewrites/slice_runs.h):
// the lowest component that sees the graph (core), the layers' Params (layers) and the weights
// container (io/safetensors.h).
//
//   Graph graph = load_model("resnet18");
//   SafeTensors weights = read_weights_file("resnet18.safetensors");   // runtime/checkpoint.h
//   InferenceRewrites r = rewrite_for_inference(graph, weights);      // r.batch_norms_folded == 20
//   Net net(std::move(graph), {.batch = 32});
//   load_weights(weights, net);
//   net.forward(/*training=*/false);
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "io/safetensors.h"

namespace vdnn {

struct InferenceRewrites {
  int batch_norms_folded = 0;
  int dropouts_removed = 0;
  std::vector<std::string> notes;  // one line each: a batch norm that stays and why, dropped metadata
};

// Rewrites a trained graph and its weights for inference; outputs do not change beyond float
// noise. Throws vdnn::Error naming the weights file, the tensor and the layer when a weight that a
// fold needs is missing, misshapen or makes 1/sqrt(running_var + eps) undefined.
InferenceRewrites rewrite_for_inference(Graph& graph, SafeTensors& weights);

}  // namespace vdnn
