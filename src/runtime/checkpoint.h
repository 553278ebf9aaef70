// runtime/checkpoint.h — a training run saved to a safetensors file, and read back to resume it.
//
// Model: the tensors are every parameter and running statistic under its name ("conv1.weight",
// "bn1.running_mean") and the SGD momentum of each trainable one ("conv1.weight:momentum"), all
// in plain layouts. The "__metadata__" strings hold format ("vdnn-checkpoint") and
// format_version, model, batch, seed, step (optimizer steps done), epoch and epoch_step (the
// epoch the next step belongs to, 0-based, and the batches of it already done), steps_per_epoch,
// total_steps, dropout_step, the optimizer and schedule settings and weights_sha256. vdnn draws
// every random number from (seed, purpose, counter) — shuffles from (seed, epoch), dropout masks
// from (seed, dropout_step) — so these counters are the whole RNG state, and the learning rate is
// a function of the step: a run resumed from a checkpoint continues bit-identically.
//
//   save_checkpoint("run.safetensors", net, config, {.step = 500, .steps_per_epoch = 468,
//                                                    .total_steps = 4680});
//   Checkpoint c = read_checkpoint("run.safetensors");    // Error naming the file if it is bad
//   check_resumable(c, net.graph().name(), net.batch(), config.seed);
//   restore_checkpoint(c, net);                   // weights, momentum, dropout counter
//   load_weights(read_safetensors("w.safetensors"), net);   // weights only (vdnn infer)
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
};

struct Checkpoint {
  SafeTensors file;  // the tensors and the raw metadata; file.path names it in errors
  std::string model;
  int64_t batch = 0;
  uint64_t seed = 0;
  CheckpointPosition position;
  uint64_t dropout_step = 0;
};

// Writes the checkpoint atomically (temporary file, fsync, rename, fsync of the folder).
void save_checkpoint(const std::string& path, const Net& net, const TrainConfig& config,
                     const CheckpointPosition& position);
// Reads and validates the file and its metadata; throws vdnn::Error naming the file.
Checkpoint read_checkpoint(const std::string& path);
// Throws vdnn::Error naming the file and both values when the checkpoint's model, batch size or
// seed differ from the run that wants to resume it.
void check_resumable(const Checkpoint& checkpoint, const std::string& model, int64_t batch, uint64_t seed);
// Loads weights, running statistics and momentum into `net` and sets its dropout counter; throws
// vdnn::Error as load_weights does, and when a momentum tensor is missing, misshapen or not finite.
void restore_checkpoint(const Checkpoint& checkpoint, Net& net);
// Loads weights and running statistics only (any safetensors file with the model's names): the
// validation --resume and `vdnn infer` share. Throws vdnn::Error naming the file and tensor when a
// tensor is missing or has another shape than the parameter, holds a NaN or Inf, a batch norm's
// running_var holds a negative value, or the weights do not hash to the metadata's weights_sha256.
void load_weights(const SafeTensors& file, Net& net);

}  // namespace vdnn
