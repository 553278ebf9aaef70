// data/batch_loader.cc — double-buffered prefetching batch loader.
#include "data/batch_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {

BatchLoader::BatchLoader(const Dataset& data, int64_t batch, bool shuffle, uint64_t seed, Shard shard,
                         Augmentation augment)
    : data_(data),
      batch_(batch),
      shuffle_(shuffle),
      seed_(seed),
      sample_(data.channels * data.height * data.width),
      shard_(shard),
      augment_(augment) {
  const std::string name = data.name.empty() ? "(unnamed)" : data.name;
  if (batch < 1) VDNN_THROW("dataset '" << name << "': batch size must be >= 1, got " << batch);
  if (data.count < 1 || sample_ < 1) {
    VDNN_THROW("dataset '" << name << "': empty (" << data.count << " samples of " << data.channels
                           << "x" << data.height << "x" << data.width
                           << "); expected at least one non-empty sample");
  }
  if (static_cast<int64_t>(data.images.size()) != data.count * sample_ ||
      static_cast<int64_t>(data.labels.size()) != data.count) {
    VDNN_THROW("dataset '" << name << "': holds " << data.images.size() << " floats and "
                           << data.labels.size() << " labels (expected " << data.count * sample_
                           << " and " << data.count << " for " << data.count << " samples)");
  }
  VDNN_CHECK(data.zero_pixel.empty() || static_cast<int64_t>(data.zero_pixel.size()) == data.channels,
             "dataset '" << name << "': " << data.zero_pixel.size() << " zero-pixel values for " << data.channels << " channels");
  VDNN_CHECK(shard.ranks >= 1 && shard.rank >= 0 && shard.rank < shard.ranks,
             "shard " << shard.rank << " of " << shard.ranks);
  const int64_t ranks = shard.ranks;
  if (shuffle) {
    batches_ = data.count / (batch * ranks);
    samples_ = batches_ * batch;
  } else {
    samples_ = (data.count - shard.rank + ranks - 1) / ranks;
    batches_ = (samples_ + batch - 1) / batch;
  }
  if (batches_ == 0 && shuffle) {
    VDNN_THROW("dataset '" << name << "': " << data.count << " samples make no full batch of "
                           << batch * ranks << (ranks > 1 ? VDNN_MSG(" (" << ranks << " ranks x " << batch << ")") : "")
                           << " (training drops partial batches; expected batch size <= "
                           << data.count / ranks << (ranks > 1 ? " per rank)" : ")"));
  }
  order_.resize(static_cast<size_t>(data.count));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  for (Slot& s : slots_) {
    s.images.resize(static_cast<size_t>(batch * sample_));
    s.labels.resize(static_cast<size_t>(batch));
  }
  worker_ = std::thread(&BatchLoader::worker_loop, this);
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void BatchLoader::start_epoch(int epoch, int64_t first_batch) {
  VDNN_CHECK(first_batch >= 0 && first_batch <= batches_,
             "first batch " << first_batch << " outside 0.." << batches_);
  std::unique_lock<std::mutex> lock(mu_);
  // Park the worker: it starts nothing while !active_, and we wait out a batch in flight.
  active_ = false;
  cv_.wait(lock, [this] { return !busy_; });
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_) {
    Rng rng(seed_, 1000 + static_cast<uint64_t>(static_cast<int64_t>(epoch)));
    for (size_t i = order_.size() - 1; i > 0; --i) {
      std::swap(order_[i], order_[rng.below(i + 1)]);
    }
  }
  epoch_ = epoch;
  produced_ = first_batch;
  consumed_ = first_batch;
  active_ = true;
  lock.unlock();
  cv_.notify_all();
}

bool BatchLoader::next(float* images, int32_t* labels, int64_t* count) {
  std::unique_lock<std::mutex> lock(mu_);
  VDNN_CHECK(active_, "BatchLoader::next called before start_epoch");
  if (consumed_ == batches_) return false;
  cv_.wait(lock, [this] { return produced_ > consumed_; });
  const Slot& slot = slots_[consumed_ % 2];
  lock.unlock();  // the worker never writes a filled slot, so copy without the lock

  std::memcpy(images, slot.images.data(),
              static_cast<size_t>(slot.count * sample_) * sizeof(float));
  std::memcpy(labels, slot.labels.data(), static_cast<size_t>(slot.count) * sizeof(int32_t));
  *count = slot.count;

  lock.lock();
  ++consumed_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

void BatchLoader::fill(int64_t batch_index, Slot& slot) const {
  const int64_t first = batch_index * batch_;
  const int64_t n = std::min(batch_, samples_ - first);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t position = shard_.rank + shard_.ranks * (first + i);  // in the epoch's order
    const int64_t src = order_[static_cast<size_t>(position)];
    float* dst = slot.images.data() + i * sample_;
    if (augment_.any()) {
      // Streams above 2^32 (shuffling uses 1000 + epoch): one per (epoch, position).
      Rng rng(seed_, (uint64_t{1} << 32) * (static_cast<uint64_t>(static_cast<uint32_t>(epoch_)) + 1) +
                         static_cast<uint64_t>(position));
      augment_sample(data_.images.data() + src * sample_, dst, data_.channels, data_.height, data_.width,
                     data_.zero_pixel, augment_, rng);
    } else {
      std::memcpy(dst, data_.images.data() + src * sample_, static_cast<size_t>(sample_) * sizeof(float));
    }
    slot.labels[static_cast<size_t>(i)] = data_.labels[static_cast<size_t>(src)];
  }
  slot.count = n;
}

void BatchLoader::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] {
      return stop_ || (active_ && produced_ < batches_ && produced_ - consumed_ < 2);
    });
    if (stop_) return;
    const int64_t index = produced_;
    busy_ = true;
    lock.unlock();
    fill(index, slots_[index % 2]);
    lock.lock();
    busy_ = false;
    if (active_) ++produced_;  // else start_epoch is waiting to reset the epoch: drop the batch
    cv_.notify_all();
  }
}

}  // namespace vdnn
