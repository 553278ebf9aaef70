// tools/conv_algo_cache.h — `vdnn infer --conv-algo fastest --algo-cache FILE`: the per-layer
// convolution algorithms measured once on this CPU, kept in a file for later runs.
//
// Model: --conv-algo fastest profiles every layer's kernels (backends/cpu/profiler.h) and takes
// the fastest forward algorithm per convolution — seconds of work and the profiler's buffers in
// the process's peak memory. A cache file keeps that choice by layer name (names survive the
// inference rewrites and the fc cut), with the model and batch it was measured at, like cuDNN's
// or TensorRT's timing caches: a missing file is measured and written, an existing one is read,
// and one for another model or batch, or missing a convolution of the graph, is refused naming it.
//
//   std::vector<ConvAlgo> algos = fastest_conv_algos(graph, 1, "vgg16_b1.algos.json");
//   // {"model": "vgg16", "batch": 1, "algorithms": {"conv1_1": "direct", "conv1_2": "winograd", ...}}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/conv_algo.h"
#include "core/graph.h"

namespace vdnn::cli {

// Per node: the fastest forward convolution algorithm (auto for the other layers), from `cache`
// when it exists, else measured now (and written to `cache` unless it is "").
std::vector<ConvAlgo> fastest_conv_algos(const Graph& graph, int64_t batch, const std::string& cache);

// Before any work: `cache` (the --algo-cache flag) is a regular file to read, or a file that can be
// created; else throws vdnn::Error naming the flag (a folder, a FIFO, a link loop, a missing
// folder: the measuring would have run first, then failed or crashed writing it).
void check_algo_cache_path(const std::string& cache);

}  // namespace vdnn::cli
