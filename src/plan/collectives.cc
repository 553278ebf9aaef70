#include "plan/collectives.h"

#include <cstddef>
#include <iterator>
#include <vector>

#include "vdnn/error.h"

namespace vdnn {
namespace {

// Builds the buckets while walking the backward pass and rewrites the steps around them.
class BucketMaker {
 public:
  BucketMaker(Program& p, const CollectiveOptions& o) : p_(p), o_(o) {}

  void run() {
    std::vector<Step> steps;
    steps.swap(p_.steps);
    add_running_statistics();
    for (Step& s : steps) {
      const bool backward = s.op == Op::kBackward;
      const int node = s.node;
      if (backward) close_if_overflowed_by(node);
      p_.steps.push_back(std::move(s));
      if (backward) {
        ready_at_ = p_.steps.size();  // node's gradients are final from here
        add_gradients(node);
      }
    }
    close_bucket();
    for (size_t b = 0; b < p_.buckets.size(); ++b) {
      Step wait{Op::kWait, StreamKind::kCompute, -1, -1, -1, done_[b]};
      p_.steps.push_back(wait);
      Step update{Op::kUpdate, StreamKind::kCompute};
      update.bucket = static_cast<int>(b);
      p_.steps.push_back(update);
    }
  }

 private:
  size_t cap() const { return p_.buckets.empty() ? o_.first_bucket_bytes : o_.bucket_bytes; }

  // Batch norm's running statistics: written in forward, averaged with the first bucket.
  void add_running_statistics() {
    for (const NodeBinding& b : p_.nodes)
      for (size_t k = 0; k < b.params.size(); ++k)
        if (b.d_params[k] < 0) add(b.params[k]);
  }

  // Node j's gradients are final once its backward kernel is issued: in reverse parameter order.
  void add_gradients(int j) {
    const NodeBinding& b = p_.nodes[j];
    for (int k = static_cast<int>(b.params.size()) - 1; k >= 0; --k) {
      if (b.d_params[k] < 0) continue;
      if (!open_.tensors.empty() && open_.bytes + p_.tensors[b.d_params[k]].bytes > cap()) close_bucket();
      add(b.d_params[k]);
      open_.params.push_back({j, k});
    }
    if (open_.bytes >= cap()) close_bucket();
  }

  // The open bucket is full without node j's first gradient (in reverse parameter order): it was
  // complete when the previous backward kernel ended, so it closes there, not after j's kernel.
  void close_if_overflowed_by(int j) {
    const NodeBinding& b = p_.nodes[j];
    for (int k = static_cast<int>(b.params.size()) - 1; k >= 0; --k) {
      if (b.d_params[k] < 0) continue;
      if (!open_.tensors.empty() && open_.bytes + p_.tensors[b.d_params[k]].bytes > cap()) close_bucket();
      return;
    }
  }

  void add(int tensor) {
    open_.tensors.push_back(tensor);
    open_.bytes += p_.tensors[tensor].bytes;
  }

  // The open bucket is complete: the comm stream all-reduces it once the compute stream is where
  // its last gradient became final (ready_at_: right after that backward kernel).
  void close_bucket() {
    if (open_.params.empty()) return;  // running statistics alone wait for the first gradients
    const int b = static_cast<int>(p_.buckets.size());
    p_.buckets.push_back(std::move(open_));
    open_ = {};
    const int ready = p_.event_count++;
    Step reduce{Op::kAllReduce, StreamKind::kComm};
    reduce.bucket = b;
    done_.push_back(p_.event_count++);
    const Step added[] = {{Op::kRecord, StreamKind::kCompute, -1, -1, -1, ready},
                          {Op::kWait, StreamKind::kComm, -1, -1, -1, ready},
                          reduce,
                          {Op::kRecord, StreamKind::kComm, -1, -1, -1, done_.back()}};
    p_.steps.insert(p_.steps.begin() + static_cast<std::ptrdiff_t>(ready_at_), std::begin(added), std::end(added));
    ready_at_ += std::size(added);  // a later bucket closing at the same point comes after this one
  }

  Program& p_;
  const CollectiveOptions& o_;
  GradientBucket open_;
  std::vector<int> done_;  // per bucket: the event its all-reduce completes
  size_t ready_at_ = 0;    // where in p_.steps the gradients added so far are all final
};

}  // namespace

void add_collectives(Program& program, const CollectiveOptions& options) {
  // User input (--ranks, --bucket-size): vdnn::Error, as the header says, not an internal check.
  if (options.ranks < 1) VDNN_THROW("ranks must be at least 1, got " << options.ranks);
  if (options.bucket_bytes == 0 || options.first_bucket_bytes == 0)
    VDNN_THROW("gradient bucket sizes must be positive");
  VDNN_CHECK(program.buckets.empty(), "the Program already has its collectives");
  program.ranks = options.ranks;
  if (options.ranks == 1 || !program.training) return;
  BucketMaker(program, options).run();
}

}  // namespace vdnn
