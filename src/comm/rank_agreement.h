// comm/rank_agreement.h — the ranks of a data-parallel run check, before their first step, that
// they were started alike: the same model, batch and seed, the same optimizer, data and starting
// weights. Ranks started otherwise would issue collectives of other sizes (a crash, or a hang) or
// train replicas that silently follow different runs.
//
// Model: every rank lists its settings in the same order, each a name as the user spells it
// ("--batch", "the model") and its value as text (a digest for a large thing: a graph, a data set,
// weights). Each setting becomes a fixed-size record (the name and the value, both cut to fit, and
// the SHA-256 of the whole value), and one all-gather of the records gives every rank every rank's
// list. Every rank compares the same lists the same way, so every rank refuses together (no rank is
// left waiting in a collective), naming the first setting that differs with rank 0's value and
// the first other rank's:
//   "the ranks were started differently: --batch is 32 on rank 0 but 16 on rank 1"
// The check is a collective: every rank calls it at the same point. With one rank it does nothing.
//
// A step taken outside a run (the Python API's train_step, forward_backward, set_weights) is
// checked the same way before its collectives: its list names the call first, so ranks in
// different calls refuse together instead of entering collectives that do not match (a hang, or
// MPI_ERR_TRUNCATE):
//   "the ranks are in different calls: rank 0 called train_step but rank 1 called forward_backward"
//   "the ranks' train_step calls differ: lr is 0.1 on rank 0 but 0.05 on rank 1"
// The call's record comes first, then the count of settings, then each setting in order.
//
//   check_ranks_agree(comm, {{"the model", "fmnist_cnn 3fa1b2c3d4e5f607"}, {"--batch", "32"}});
//   check_ranks_agree(comm, {{"lr", "0.1"}}, "train_step");
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "vdnn/error.h"

namespace vdnn {

struct RankSetting {
  std::string name;   // as the user spells it: "--batch", "batch", "the model"
  std::string value;  // its value as text; only the first 64 bytes are shown
};

// Thrown on every rank together when the ranks' settings differ: a caller may end each rank
// normally (no rank waits for another), instead of aborting the job.
class RanksDisagree : public Error {
 public:
  using Error::Error;
};

// Throws RanksDisagree on every rank when some rank's call or settings differ from rank 0's.
// `call`: the step being taken ("train_step"); "" for the checks before a Net's or a run's start.
void check_ranks_agree(Communicator& comm, const std::vector<RankSetting>& settings, const std::string& call = "");

}  // namespace vdnn
