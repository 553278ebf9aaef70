// plan/collectives.h — data-parallel gradient buckets and their all-reduce steps in a Program.
//
// Model (PyTorch DDP's buckets, Li et al., VLDB 2020, placed statically): with N > 1 ranks every
// trainable gradient is summed over the ranks before the update. Gradients are grouped into
// buckets in the order the backward pass finishes them (DDP: reverse parameter order, rebuilt
// after the first step from the observed order; here the Program knows the order), each bucket
// up to `bucket_bytes` (DDP: 25 MiB; the first one `first_bucket_bytes`, DDP: 1 MiB, so the first
// all-reduce starts early). Right after the backward kernel that finishes a bucket, the compute
// stream records an event, the comm stream waits for it and all-reduces the bucket (kAllReduce),
// overlapping the rest of the backward pass. After the last backward kernel the compute stream
// updates bucket by bucket (kUpdate), each waiting only for its own all-reduce. Running statistics
// (batch norm) join the first bucket and are averaged, so every rank holds the same ones. Every
// rank builds the same Program, so buckets are issued in the same order everywhere.
//
//   Program p = build_program(graph, value_bytes, facts, {Policy::kAll});
//   add_collectives(p, {.ranks = 4});
//   p.buckets.size();   // kAllReduce / kUpdate steps name them by index
#pragma once

#include <cstddef>

#include "plan/program.h"

namespace vdnn {

struct CollectiveOptions {
  int ranks = 1;                         // 1: the Program is left as it is
  size_t bucket_bytes = 25u << 20;       // DDP's bucket_cap_mb = 25
  size_t first_bucket_bytes = 1u << 20;  // DDP's _DEFAULT_FIRST_BUCKET_BYTES
};

// Adds the buckets and their kAllReduce and kUpdate steps to a training Program (not to an
// evaluation one, which has no gradients). Throws vdnn::Error when ranks < 1 or a bucket size is 0.
void add_collectives(Program& program, const CollectiveOptions& options);

}  // namespace vdnn
