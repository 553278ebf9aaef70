// rewrites/slice_runs.h — a graph whose runs of consecutive layers compute in slices of the batch.
//
// Model (issue 21 step 2; moDNN's sliced layers, Chen et al., DATE 2018): a run of layers
// `first`..`last` that form a chain runs as k slices, each a chain of its own over batch / k
// samples: BatchSlice takes slice s of the run's input, the run's layers follow at batch / k
// (slice s of layer L is node "L/s<s>", slice 0 owning the parameters the others share), and
// BatchGather puts the last layer's k outputs back together for the layers after the run. The
// slices come one after another (slice-major), so each slice's maps are values of their own: the
// Program keeps, offloads or recomputes them one by one, and the largest layer's input plus output
// need not be on the device at once. A weight gradient is the sum of its slices' (float rounding
// differs from one pass over the batch); the math is otherwise the same: every layer a run
// may hold but batch norm (below) treats the samples of a batch independently.
// A run may hold conv, relu, relu6, max_pool, avg_pool, lrn, fc, flatten and batch_norm layers.
// Batch norm couples the samples of a batch through its statistics: each becomes bn_stats per slice,
// one bn_combine and bn_apply per slice (layers/batch_norm_slices.h), with a statistics pass before
// the run's own that re-runs the run's layers before it on each slice ("conv1/s0/for_bn1"), so the
// whole batch's statistics exist before any slice is normalized. Dropout draws its mask per batch
// and ends a run; the run's input must be read by the run alone (the graph input, or a value no
// other layer reads), so that the slices' gradients fill its gradient without sums. The layers of
// `graph` are borrowed (SliceOfLayer): it must outlive the sliced graph.
//
//   Graph g = load_model("vgg_cifar");
//   SlicedGraph s = slice_runs(g, /*batch=*/256, {parse_slice_run("conv1_1:pool1:4")});
//   s.graph.nodes()[s.node_of[0]].layer->name();   // "conv1_1/s0": owns conv1_1's parameters
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"

namespace vdnn {

struct SliceRun {
  std::string first, last;  // layer names; a run of one layer names it twice
  int slices = 2;
};

// "FIRST:LAST:K" or "LAYER:K"; throws vdnn::Error naming the text and the expected form.
SliceRun parse_slice_run(const std::string& text);
std::string to_string(const SliceRun& run);

struct SlicedGraph {
  Graph graph;
  std::vector<int> node_of;  // per node of the original graph: the node holding its parameters
};

// Throws vdnn::Error naming the run and the layer when a run is not a chain, holds a layer that
// couples samples, overlaps another, has an input other layers read, or k does not divide `batch`.
SlicedGraph slice_runs(const Graph& graph, int64_t batch, const std::vector<SliceRun>& runs);

// The runs a search may slice (plan/slice_search.h), each with slices = 1 for the caller to set:
// maximal chains that slice_runs accepts, cut after each pooling layer (where maps shrink, so
// each block of a VGG-style network gets a count of its own), in graph order, non-overlapping.
std::vector<SliceRun> slice_run_candidates(const Graph& graph);

}  // namespace vdnn
