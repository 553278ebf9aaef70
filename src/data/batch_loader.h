// data/batch_loader.h — mini-batch iteration over a Dataset with a background prefetch thread.
//
// Model: an epoch visits the samples in an order that is the identity (shuffle == false,
// evaluation) or a Fisher-Yates permutation drawn from Rng(seed, 1000 + epoch) starting from the
// identity (shuffle == true, training), so epoch e's order depends only on (seed, e). Training
// drops the last partial batch; evaluation keeps it and next() reports its real size. A worker
// thread gathers batch k+1 (and k+2) into an internal double buffer while the caller computes on
// batch k; the output is exactly what a sequential loader would produce. The Dataset must outlive
// the loader; call start_epoch/next from one thread.
// With an Augmentation (data/augment.h; training), each sample is augmented as it is gathered, from
// an Rng seeded by (seed, epoch, position in the epoch's order): the same run gives the same
// batches whatever the thread timing.
// Data parallel (Shard{rank, ranks}): as PyTorch's DistributedSampler, rank r reads positions
// r, r + ranks, r + 2 ranks, ... of each epoch's order, so the ranks' batch k together are the
// one-process batch k of `batch * ranks` samples, and no sample is read twice in an epoch.
// Training drops the last partial global batch (every rank has the same number of full batches);
// evaluation reads every sample once, the ranks' last batches possibly shorter (or none).
//
//   vdnn::BatchLoader loader(train_set, /*batch=*/64, /*shuffle=*/true, /*seed=*/1);
//   std::vector<float> x(64 * train_set.channels * train_set.height * train_set.width);
//   std::vector<int32_t> y(64);
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     loader.start_epoch(epoch);
//     int64_t n = 0;
//     while (loader.next(x.data(), y.data(), &n)) train_step(x.data(), y.data(), n);
//   }
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "data/augment.h"
#include "data/dataset.h"

namespace vdnn {

// Which share of every epoch a loader reads (data parallel); {0, 1}: all of it.
struct Shard {
  int rank = 0;
  int ranks = 1;
};

class BatchLoader {
 public:
  // Throws vdnn::Error if batch < 1, the dataset is empty or inconsistent, or (shuffle == true)
  // the dataset holds fewer samples than one batch.
  // Also when the shard is not 0 <= rank < ranks.
  BatchLoader(const Dataset& data, int64_t batch, bool shuffle, uint64_t seed, Shard shard = {},
              Augmentation augment = {});
  BatchLoader(Dataset&&, int64_t, bool, uint64_t, Shard = {}, Augmentation = {}) = delete;  // keeps a reference
  ~BatchLoader();  // stops and joins the worker, also mid-epoch
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t batches_per_epoch() const { return batches_; }
  int64_t batch_size() const { return batch_; }
  int64_t sample_floats() const { return sample_; }  // C * H * W

  // Begins epoch `epoch` (any value, any order; abandons an unfinished epoch) at batch
  // `first_batch` of it (0..batches_per_epoch(): a resumed run skips the batches it has done).
  void start_epoch(int epoch, int64_t first_batch = 0);

  // Copies the next batch into images (room for batch_size() * sample_floats() floats) and labels
  // (batch_size() entries), sets *count to its size; returns false once the epoch is exhausted.
  bool next(float* images, int32_t* labels, int64_t* count);

 private:
  struct Slot {
    std::vector<float> images;
    std::vector<int32_t> labels;
    int64_t count = 0;
  };

  void worker_loop();
  void fill(int64_t batch_index, Slot& slot) const;

  const Dataset& data_;
  const int64_t batch_;
  const bool shuffle_;
  const uint64_t seed_;
  const int64_t sample_;
  const Shard shard_;
  const Augmentation augment_;
  int64_t samples_ = 0;  // this shard's samples per epoch
  int64_t batches_ = 0;
  std::vector<int64_t> order_;  // written only while the worker is idle
  int epoch_ = 0;               // likewise: the epoch running (augmentation's seeds)

  std::mutex mu_;
  std::condition_variable cv_;
  Slot slots_[2];
  bool active_ = false;  // an epoch is running (false before start_epoch and while it resets)
  bool busy_ = false;    // worker is filling a slot outside the lock
  bool stop_ = false;
  int64_t produced_ = 0;  // batches of this epoch filled (slot = index % 2)
  int64_t consumed_ = 0;  // batches of this epoch handed to the caller
  std::thread worker_;    // last member: starts after everything above is initialized
};

}  // namespace vdnn
