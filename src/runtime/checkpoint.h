// runtime/checkpoint.h — a training run saved to a safetensors file, and read back to resume it.
//
// Model: the tensors are every parameter and running statistic under its name ("conv1.weight",
// "bn1.running_mean"), each batch norm's "bn1.num_batches_tracked" (I64 scalar: its count loaded
// with the weights plus the optimizer steps done, where PyTorch counts training forwards) and the
// optimizer state of each trainable one (SGD: "conv1.weight:momentum"; AdamW: "conv1.weight:exp_avg"
// and "conv1.weight:exp_avg_sq", plan/optimizer_state.h), all in plain layouts with
// PyTorch's names and shapes (ParamSpec::file_dims: a grouped convolution's weight is
// [O, I/groups, kh, kw]), so a state_dict loads into vdnn and vdnn's weights into PyTorch (less
// the optimizer-state tensors, which PyTorch keeps in its optimizer). The "__metadata__" strings
// hold format ("vdnn-checkpoint") and format_version, model, batch (per rank), ranks, seed, step (optimizer steps
// done), epoch and epoch_step (the epoch the next step belongs to, 0-based, and the batches of it
// already done), steps_per_epoch, total_steps, dropout_step, optimizer ("sgd" or "adamw"; without
// it, "sgd") and optimizer_steps (AdamW's t: the updates made, which --on-nan skip makes fewer than
// step; without it, step), the optimizer and schedule settings
// (weight_decay_on: "weights" or "all"; a checkpoint without it is "weights"), the augmentation of
// the training batches (augment: "none", "flip" or "cifar"; without it, "none") and weights_sha256.
// vdnn draws every random number from (seed, purpose, counter) — shuffles from (seed, epoch),
// dropout masks from (seed, dropout_step), augmentation from (seed, epoch, position) — so these counters are the whole
// RNG state, and the learning rate is a function of the step: a run resumed from a checkpoint continues
// bit-identically.
//
//   save_checkpoint("run.safetensors", net, config, {.step = 500, .steps_per_epoch = 468,
//                                                    .total_steps = 4680});
//   Checkpoint c = read_checkpoint("run.safetensors");    // Error naming the file if it is bad
//   check_resumable(c, net.graph().name(), net.batch(), config.seed);
//   restore_checkpoint(c, net);                   // weights, optimizer state, dropout counter
//   load_weights(read_weights_file("w.safetensors"), net);   // weights only (vdnn infer)
#pragma once

#include <cstdint>
#include <string>

#include "io/safetensors.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

namespace vdnn {

inline constexpr int kCheckpointFormatVersion = 1;

// Where a run is: optimizer steps done, and the run's shape (the epoch follows from them).
struct CheckpointPosition {
  int64_t step = 0;
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 0;
  int64_t optimizer_steps = -1;  // updates made (AdamW's t); -1: step
};

struct Checkpoint {
  SafeTensors file;  // the tensors and the raw metadata; file.path names it in errors
  std::string model;
  int64_t batch = 0;  // per rank
  int64_t ranks = 1;  // data-parallel ranks of the run that wrote it
  uint64_t seed = 0;
  CheckpointPosition position;
  uint64_t dropout_step = 0;
  SgdConfig::DecayOn weight_decay_on = SgdConfig::DecayOn::kWeights;
  std::string augment = "none";                   // augmentation_name of the run's --augment
  OptimizerKind optimizer = OptimizerKind::kSgd;  // whose state tensors it holds
  int64_t optimizer_steps = 0;                    // AdamW's t
};

// PyTorch's batch-norm counter "<layer>.num_batches_tracked" (an integer scalar): the one integer
// tensor a weights file may hold.
bool is_batches_tracked(const std::string& tensor_name);
// read_safetensors taking those counters: the weights files --resume, --initial-weights and
// `vdnn infer` read. Any other integer tensor is an error naming the file, tensor and dtype.
SafeTensors read_weights_file(const std::string& path);

// The Net's weights as a PyTorch state_dict, in its order (no metadata): every parameter and
// running statistic under its name in PyTorch's shape (ParamSpec::file_dims), and after each batch
// norm's its "<layer>.num_batches_tracked" (I64 scalar: the count loaded with the weights plus
// `step`, the optimizer steps done). What save_weights and save_checkpoint write, and what
// load_weights(file, net, step) takes back.
// A tied layer's parameters are written a second time under its own names, after the others
// ("lm_head.weight", a copy of "transformer.wte.weight"), as PyTorch's state_dict of a tied model
// holds them; loading checks such a copy equals its owner's tensor.
SafeTensors state_dict(const Net& net, int64_t step);
// The (tied name, owner's name) of every parameter a layer shares with another (`tied_to` in a
// model file), e.g. {"lm_head.weight", "transformer.wte.weight"}; slices of one layer are not listed.
std::vector<std::pair<std::string, std::string>> tied_parameter_names(const Graph& graph);
// Writes the checkpoint atomically (temporary file, fsync, rename, fsync of the folder);
// `class_names`: the training data's (Dataset::class_names), kept as metadata "class_names".
void save_checkpoint(const std::string& path, const Net& net, const TrainConfig& config,
                     const CheckpointPosition& position, const std::vector<std::string>& class_names = {});
// The weights alone, as a PyTorch state_dict (load_state_dict(strict=True) takes it as it is):
// state_dict(net, step), with metadata model, seed, step and weights_sha256 (`vdnn infer` reads
// it; --resume does not, it has no optimizer state). Atomic, as checkpoints. `vdnn train
// --save-weights` and the Python API's Net.save write their files with it.
void save_weights(const std::string& path, const Net& net, uint64_t seed, int64_t step,
                  const std::vector<std::string>& class_names = {});
// The metadata "class_names" of weights trained on data that names its classes (image folders):
// a JSON array of the names in label order, escaped as util/utf8.h does; "" for no names.
std::string class_names_metadata(const std::vector<std::string>& names);
// Reads and validates the file and its metadata; throws vdnn::Error naming the file.
Checkpoint read_checkpoint(const std::string& path);
// Throws vdnn::Error naming the file and both values when the checkpoint's model, batch size or
// seed differ from the run that wants to resume it.
void check_resumable(const Checkpoint& checkpoint, const std::string& model, int64_t batch, uint64_t seed);
// Throws vdnn::Error naming the file and both counts when the checkpoint's run had another number
// of data-parallel ranks.
void check_same_ranks(const Checkpoint& checkpoint, int ranks);
// Throws vdnn::Error naming the file and both values when the checkpoint's --weight-decay-on
// differs from `config`'s (the others may change on resume, as a new learning rate may).
void check_same_decay_rule(const Checkpoint& checkpoint, const TrainConfig& config);
// Likewise for --augment: the batches a resumed run draws follow it.
void check_same_augmentation(const Checkpoint& checkpoint, const TrainConfig& config);
// Loads weights, running statistics and optimizer state into `net` and sets its dropout counter;
// throws vdnn::Error as load_weights does, when a state tensor is missing, misshapen or not finite,
// and when the checkpoint's optimizer is not the Net's (NetOptions::optimizer): SGD's momentum and
// AdamW's moments do not convert into each other; start from its weights alone (--initial-weights).
void restore_checkpoint(const Checkpoint& checkpoint, Net& net);
// Loads weights and running statistics only (any safetensors file with the model's names): the
// validation --resume and `vdnn infer` share. Throws vdnn::Error naming the file and tensor when a
// tensor is missing or has another shape than the parameter, holds a NaN or Inf, a batch norm's
// running_var holds a negative value, or the weights do not hash to the metadata's weights_sha256.
// A batch norm's "<layer>.num_batches_tracked", if present (an integer scalar >= steps_done), sets
// the Net's count before step 0 (Net::batches_tracked_base): its value less `steps_done`.
void load_weights(const SafeTensors& file, Net& net, int64_t steps_done = 0);
// The same, freeing each tensor's values as soon as the Net holds them, so the host never holds a
// model's weights twice (`vdnn infer`: VGG-16's 528 MiB); `file` keeps its names and metadata.
void load_weights(SafeTensors&& file, Net& net);
// The checks of load_weights on the file alone, with the same messages: every parameter of `graph`
// present, shaped and finite, running variances >= 0, and the metadata's weights_sha256 (if any)
// over its tensors in graph order, as Net::weights_sha256 hashes them. For weights about to be
// rewritten (rewrites/inference_rewrites.h), whose values and hash change. Returns that hash (what
// weights_sha256 gives), computed in the same pass.
std::string check_weights(const SafeTensors& file, const Graph& graph);
// Net::weights_sha256 of the Net these weights would load into, from the file alone; throws
// vdnn::Error naming the file and tensor when one of `graph`'s parameters is missing or misshapen.
std::string weights_sha256(const SafeTensors& file, const Graph& graph);

}  // namespace vdnn
