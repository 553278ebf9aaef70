// data/batch_loader.h — mini-batch iteration over a Dataset, batches made ahead by worker threads.
//
// Model: an epoch visits the samples in an order that is the identity (shuffle == false,
// evaluation) or a Fisher-Yates permutation drawn from Rng(seed, 1000 + epoch) starting from the
// identity (shuffle == true, training), so epoch e's order depends only on (seed, e); a reader
// that draws its own samples (SampleReader::draws_samples: token windows) is read in the identity
// order and no permutation is kept. Training
// drops the last partial batch; evaluation keeps it and next() reports its real size. `threads`
// workers each gather (and, from a Dataset's reader, decode) whole batches into a ring of
// threads + 1 slots: batches k+1 .. k+threads+1 are made while the caller computes on batch k, and
// none further (a bounded queue). Each sample brings Dataset::labels_per_sample labels (1 for
// images; T for token windows, data/token_windows.h), stored sample-major. The output is exactly what a sequential
// loader would produce, whatever the number of threads. next(BatchView*) hands out the slot itself (no copy) until the
// next call; waited_seconds() is how long the caller has waited for batches. The Dataset must
// outlive the loader; call start_epoch/next from one thread. A worker's error (an unreadable
// image) is thrown by next() at the batch it belongs to.
// With an Augmentation (data/augment.h; training), each sample is augmented as it is gathered, from
// an Rng seeded by (seed, epoch, position in the epoch's order): the same run gives the same
// batches whatever the thread timing. A reader gets that Rng too (token windows draw their offsets
// from it).
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
#include <exception>
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
  // Also when threads < 1, or a resized crop is asked of a dataset without a reader.
  BatchLoader(const Dataset& data, int64_t batch, bool shuffle, uint64_t seed, Shard shard = {},
              Augmentation augment = {}, int threads = 1);
  BatchLoader(Dataset&&, int64_t, bool, uint64_t, Shard = {}, Augmentation = {},
              int = 1) = delete;  // keeps a reference
  ~BatchLoader();                 // stops and joins the workers, also mid-epoch
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t batches_per_epoch() const { return batches_; }
  int64_t batch_size() const { return batch_; }
  int64_t sample_floats() const { return sample_; }  // C * H * W
  int64_t labels_per_sample() const { return labels_per_sample_; }

  // Begins epoch `epoch` (any value, any order; abandons an unfinished epoch) at batch
  // `first_batch` of it (0..batches_per_epoch(): a resumed run skips the batches it has done).
  void start_epoch(int epoch, int64_t first_batch = 0);

  // Copies the next batch into images (room for batch_size() * sample_floats() floats) and labels
  // (batch_size() * labels_per_sample() entries), sets *count to its size; returns false once the
  // epoch is exhausted.
  bool next(float* images, int32_t* labels, int64_t* count);

  // The next batch where the worker made it, valid until the next call of next or start_epoch.
  struct BatchView {
    const float* images = nullptr;
    const int32_t* labels = nullptr;  // count * labels_per_sample(), sample-major
    int64_t count = 0;
  };
  bool next(BatchView* batch);
  // Gives the last BatchView's slot back to the workers now (the next call would): for a caller
  // done with it before its step ends, so one more batch is made ahead.
  void release();

  double waited_seconds() const { return waited_; }  // in next(), since construction
  int64_t bad_images() const { return data_.reader ? data_.reader->bad_images() : 0; }

 private:
  struct Slot {
    std::vector<float> images;
    std::vector<int32_t> labels;
    int64_t count = 0;
    int64_t ready = -1;        // the batch it holds, or -1
    std::exception_ptr error;  // why that batch could not be made
  };

  void worker_loop();
  void fill(int64_t batch_index, Slot& slot) const;

  const Dataset& data_;
  const int64_t batch_;
  const bool shuffle_;
  const uint64_t seed_;
  const int64_t sample_;
  const int64_t labels_per_sample_;
  const Shard shard_;
  const Augmentation augment_;
  int64_t samples_ = 0;  // this shard's samples per epoch
  int64_t batches_ = 0;
  std::vector<int64_t> order_;  // written only while the worker is idle; empty: the identity
  int epoch_ = 0;               // likewise: the epoch running (augmentation's seeds)

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;  // threads + 1; batch k goes to slot k % size
  bool active_ = false;      // an epoch is running (false before start_epoch and while it resets)
  int busy_ = 0;             // workers filling a slot outside the lock
  bool stop_ = false;
  int64_t claimed_ = 0;               // batches of this epoch taken by a worker
  int64_t consumed_ = 0;              // batches of this epoch given back by the caller
  bool held_ = false;                 // the caller holds slot consumed_ (a BatchView)
  double waited_ = 0;                 // the caller's, in next()
  std::vector<std::thread> workers_;  // last member: start after everything above is initialized
};

}  // namespace vdnn
