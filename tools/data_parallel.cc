#include "data_parallel.h"

#include <cstdio>
#include <cstdlib>

#include "plan/step_timeline.h"
#include "util/json_dump.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn::cli {

std::unique_ptr<Communicator> start_ranks(double timeout_seconds) {
  std::unique_ptr<Communicator> comm = make_communicator({.timeout_seconds = timeout_seconds});
  if (comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    VDNN_THROW("rank " << comm->rank() << ": cannot silence its output (/dev/null)");
  return comm;
}

void print_ranks(const Communicator& comm, const Net& net, int64_t batch) {
  if (comm.size() == 1) return;
  std::printf(
      "data parallel: %d ranks (%s), --batch %lld per rank, global batch %lld; gradients all-reduced in %zu "
      "buckets (%s per step)\n",
      comm.size(), comm.name(), static_cast<long long>(batch), static_cast<long long>(batch * comm.size()),
      net.train_program().buckets.size(), format_bytes(net.train_program().all_reduced_bytes()).c_str());
}

void check_replicas(Communicator& comm, const Net& net, int64_t step) {
  const std::vector<std::string> hashes = comm.gather_strings(net.weights_sha256());
  for (int r = 1; r < comm.size(); ++r)
    if (hashes[r] != hashes[0])
      VDNN_THROW("--verify-replicas: after step "
                 << step << " rank " << r << " holds weights " << hashes[r].substr(0, 16) << "... but rank 0 holds "
                 << hashes[0].substr(0, 16) << "... (the all-reduce did not give every rank the same sum)");
}

nlohmann::json ranks_report(Communicator& comm, Net& net, const TrainResult& result, const StepRecorder& recorder,
                            bool replicas_verified) {
  const double steps = std::max<double>(1, static_cast<double>(result.iterations));
  const CommOverlap overlap = comm_overlap(recorder.timeline());
  const nlohmann::json mine = {
      {"rank", comm.rank()},
      {"comm_busy_ms_per_iteration", net.device().stats(StreamKind::kComm).busy_seconds * 1e3 / steps},
      {"compute_busy_ms_per_iteration", net.device().stats(StreamKind::kCompute).busy_seconds * 1e3 / steps},
      {"measured_step", recorder.steps_begun()},
      {"all_reduce_ms", overlap.all_reduce_seconds * 1e3},
      {"all_reduce_hidden_fraction", overlap.hidden_fraction()},
      {"all_reduce_exposed_ms", overlap.exposed_seconds * 1e3},
  };
  nlohmann::json per_rank = nlohmann::json::array();
  for (const std::string& text : comm.gather_strings(dump_json(mine))) per_rank.push_back(nlohmann::json::parse(text));
  return {{"ranks", comm.size()},
          {"communicator", comm.name()},
          {"batch_per_rank", net.batch()},
          {"global_batch", net.batch() * comm.size()},
          {"gradient_buckets", net.train_program().buckets.size()},
          {"all_reduced_bytes_per_step", net.train_program().all_reduced_bytes()},
          {"replicas_verified_every_step", replicas_verified},
          {"per_rank", per_rank}};
}

void stop_every_rank(Communicator& comm, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: rank %d of %d: %s\n", comm.rank(), comm.size(), what.c_str());
  std::fflush(stderr);
  comm.abort(1);
  std::abort();  // not reached: abort() ends the process, but GCC cannot see [[noreturn]] through a virtual call
}

}  // namespace vdnn::cli
