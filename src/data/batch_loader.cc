// data/batch_loader.cc — a batch loader with a pool of workers and a bounded ring of batches.
#include "data/batch_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {

BatchLoader::BatchLoader(const Dataset& data, int64_t batch, bool shuffle, uint64_t seed, Shard shard,
                         Augmentation augment, int threads)
    : data_(data),
      batch_(batch),
      shuffle_(shuffle),
      seed_(seed),
      sample_(data.channels * data.height * data.width),
      labels_per_sample_(data.labels_per_sample),
      shard_(shard),
      augment_(augment) {
  const std::string name = data.name.empty() ? "(unnamed)" : data.name;
  if (batch < 1) VDNN_THROW("dataset '" << name << "': batch size must be >= 1, got " << batch);
  if (data.count < 1 || sample_ < 1) {
    VDNN_THROW("dataset '" << name << "': empty (" << data.count << " samples of " << data.channels << "x"
                           << data.height << "x" << data.width << "); expected at least one non-empty sample");
  }
  if (data.labels_per_sample < 1)
    VDNN_THROW("dataset '" << name << "': " << data.labels_per_sample << " labels per sample; expected >= 1");
  const int64_t stored = data.reader ? 0 : data.count * sample_;  // a reader makes the samples
  const int64_t labels = data.count * data.labels_per_sample;
  // A reader may make the labels too (token windows): then none are stored.
  const bool labels_fit = static_cast<int64_t>(data.labels.size()) == labels || (data.reader && data.labels.empty());
  if (static_cast<int64_t>(data.images.size()) != stored || !labels_fit) {
    VDNN_THROW("dataset '" << name << "': holds " << data.images.size() << " floats and " << data.labels.size()
                           << " labels (expected " << stored << " and " << labels << " for " << data.count
                           << " samples of " << data.labels_per_sample << " label"
                           << (data.labels_per_sample == 1 ? "" : "s") << ")");
  }
  VDNN_CHECK(data.zero_pixel.empty() || static_cast<int64_t>(data.zero_pixel.size()) == data.channels,
             "dataset '" << name << "': " << data.zero_pixel.size() << " zero-pixel values for " << data.channels
                         << " channels");
  VDNN_CHECK(shard.ranks >= 1 && shard.rank >= 0 && shard.rank < shard.ranks,
             "shard " << shard.rank << " of " << shard.ranks);
  if (threads < 1)
    VDNN_THROW("dataset '" << name << "': " << threads << " loader threads (--data-threads); expected >= 1");
  if (augment.resized_crop && !data.reader)
    VDNN_THROW(
        "dataset '" << name << "': a random resized crop (--augment imagenet) is drawn before decoding, from an "
                    << "image folder (--data DIR of DIR/train/<class>/*.jpg); for images in memory use --augment "
                       "cifar or flip");
  const int64_t ranks = shard.ranks;
  if (shuffle) {
    batches_ = data.count / (batch * ranks);
    samples_ = batches_ * batch;
  } else {
    samples_ = (data.count - shard.rank + ranks - 1) / ranks;
    batches_ = (samples_ + batch - 1) / batch;
  }
  if (batches_ == 0 && shuffle) {
    VDNN_THROW("dataset '" << name << "': " << data.count << " samples make no full batch of " << batch * ranks
                           << (ranks > 1 ? VDNN_MSG(" (" << ranks << " ranks x " << batch << ")") : "")
                           << " (training drops partial batches; expected batch size <= " << data.count / ranks
                           << (ranks > 1 ? " per rank)" : ")"));
  }
  // A reader that draws its samples (token windows) ignores the index: no order to keep (it would
  // be 8 bytes per window, 4 GB for 17 GB of tokens cut into windows of 16).
  if (!(shuffle && data.reader && data.reader->draws_samples())) order_.resize(static_cast<size_t>(data.count));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  slots_.resize(static_cast<size_t>(threads) + 1);
  for (Slot& s : slots_) {
    s.images.resize(static_cast<size_t>(batch * sample_));
    s.labels.resize(static_cast<size_t>(batch * labels_per_sample_));
  }
  try {
    for (int t = 0; t < threads; ++t) workers_.emplace_back(&BatchLoader::worker_loop, this);
  } catch (...) {  // a thread that could not start: stop and join those that did
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& w : workers_) w.join();
    throw;
  }
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void BatchLoader::start_epoch(int epoch, int64_t first_batch) {
  VDNN_CHECK(first_batch >= 0 && first_batch <= batches_, "first batch " << first_batch << " outside 0.." << batches_);
  std::unique_lock<std::mutex> lock(mu_);
  // Park the workers: they start nothing while !active_, and we wait out the batches in flight.
  active_ = false;
  cv_.wait(lock, [this] { return busy_ == 0; });
  for (Slot& s : slots_) s.ready = -1, s.error = nullptr;
  held_ = false;
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_ && !order_.empty()) {
    Rng rng(seed_, 1000 + static_cast<uint64_t>(static_cast<int64_t>(epoch)));
    for (size_t i = order_.size() - 1; i > 0; --i) {
      std::swap(order_[i], order_[rng.below(i + 1)]);
    }
  }
  epoch_ = epoch;
  claimed_ = first_batch;
  consumed_ = first_batch;
  active_ = true;
  lock.unlock();
  cv_.notify_all();
}

bool BatchLoader::next(float* images, int32_t* labels, int64_t* count) {
  BatchView batch;
  if (!next(&batch)) return false;
  std::memcpy(images, batch.images, static_cast<size_t>(batch.count * sample_) * sizeof(float));
  std::memcpy(labels, batch.labels, static_cast<size_t>(batch.count * labels_per_sample_) * sizeof(int32_t));
  *count = batch.count;
  release();
  return true;
}

bool BatchLoader::next(BatchView* batch) {
  release();
  std::unique_lock<std::mutex> lock(mu_);
  VDNN_CHECK(active_, "BatchLoader::next called before start_epoch");
  if (consumed_ == batches_) return false;
  Slot& slot = slots_[static_cast<size_t>(consumed_ % static_cast<int64_t>(slots_.size()))];
  if (slot.ready != consumed_) {
    const auto start = std::chrono::steady_clock::now();
    cv_.wait(lock, [&] { return slot.ready == consumed_; });
    waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (slot.error) std::rethrow_exception(slot.error);
  held_ = true;  // no worker writes a slot before the caller gives it back
  *batch = {slot.images.data(), slot.labels.data(), slot.count};
  return true;
}

void BatchLoader::release() {
  if (!held_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    ++consumed_;
  }
  cv_.notify_all();
}

void BatchLoader::fill(int64_t batch_index, Slot& slot) const {
  const int64_t first = batch_index * batch_;
  const int64_t n = std::min(batch_, samples_ - first);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t position = shard_.rank + shard_.ranks * (first + i);  // in the epoch's order
    const int64_t src = order_.empty() ? position : order_[static_cast<size_t>(position)];
    float* dst = slot.images.data() + i * sample_;
    int32_t* labels = slot.labels.data() + i * labels_per_sample_;
    // Streams above 2^32 (shuffling uses 1000 + epoch): one per (epoch, position).
    Rng rng(seed_, (uint64_t{1} << 32) * (static_cast<uint64_t>(static_cast<uint32_t>(epoch_)) + 1) +
                       static_cast<uint64_t>(position));
    if (data_.reader) {
      data_.reader->read(src, dst, labels, augment_, rng);  // the sample and its labels
      continue;
    }
    if (augment_.any()) {
      augment_sample(data_.images.data() + src * sample_, dst, data_.channels, data_.height, data_.width,
                     data_.zero_pixel, augment_, rng);
    } else {
      std::memcpy(dst, data_.images.data() + src * sample_, static_cast<size_t>(sample_) * sizeof(float));
    }
    std::memcpy(labels, data_.labels.data() + src * labels_per_sample_,
                static_cast<size_t>(labels_per_sample_) * sizeof(int32_t));
  }
  slot.count = n;
}

void BatchLoader::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t ring = static_cast<int64_t>(slots_.size());
  while (true) {
    cv_.wait(lock, [&] { return stop_ || (active_ && claimed_ < batches_ && claimed_ - consumed_ < ring); });
    if (stop_) return;
    const int64_t index = claimed_++;
    Slot& slot = slots_[static_cast<size_t>(index % ring)];
    ++busy_;
    lock.unlock();
    std::exception_ptr error;
    try {
      fill(index, slot);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    --busy_;
    if (active_) slot.ready = index, slot.error = error;  // else start_epoch resets the epoch: dropped
    cv_.notify_all();
  }
}

}  // namespace vdnn
