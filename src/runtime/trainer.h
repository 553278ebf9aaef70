// runtime/trainer.h — epochs of SGD or AdamW over a data set, with evaluation and timing.
//
//   Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1});
//   TrainConfig cfg;                 // epochs, iterations, lr, optimizer, weight decay, schedule
//   Trainer trainer(net, cfg);
//   TrainResult r = trainer.run(train_set, &test_set, [](const EpochResult& e) { print(e); });
//   r.test_accuracy; r.images_per_second; r.weights_sha256;
//
// Checkpoints (runtime/checkpoint.h): cfg.save_path and cfg.checkpoint_every save the run;
// trainer.resume(read_checkpoint(path)) before run() continues one exactly where it was saved.
// Data parallel (a Net with a communicator of N ranks, each process running its own Trainer):
// each rank reads its shard of every global batch of N x batch samples (data/batch_loader.h),
// the Program all-reduces the gradients and updates each bucket as its sum arrives, and the
// figures (loss, accuracy, images/s, evaluation) are the whole global batch's, the same on every
// rank; only rank 0 writes checkpoints. --on-nan skip needs one rank. Before its first step run()
// checks that every rank was started alike (comm/rank_agreement.h: the optimizer, its schedule,
// the run's length, the data, the starting weights; the Net checked the model, batch and seed),
// else every rank throws RanksDisagree naming the first setting that differs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/rank_agreement.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "runtime/net.h"
#include "runtime/optimizer.h"
#include "runtime/sgd.h"

namespace vdnn {

struct TrainConfig {
  int epochs = 10;
  int64_t iterations = 0;  // > 0: stop after this many steps in total (overrides epochs)
  double lr = 0.05;
  // The optimizer (runtime/optimizer.h); the Net must be planned for the same one
  // (NetOptions::optimizer), whose state it keeps in the arena.
  OptimizerKind optimizer = OptimizerKind::kSgd;
  double momentum = 0.9;       // SGD
  double weight_decay = 5e-4;  // default_weight_decay(optimizer): SGD 5e-4, AdamW 0.01
  SgdConfig::DecayOn weight_decay_on = SgdConfig::DecayOn::kWeights;  // kAll: PyTorch's convention
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;                      // AdamW
  // > 0: scale the gradients to this global L2 norm when above it (clip_grad_norm_); one rank only.
  double clip_grad_norm = 0;
  LrSchedule::Kind schedule = LrSchedule::kCosine;
  int step_epochs = 5;
  double gamma = 0.1;
  int64_t warmup_steps = 0;  // linear warm-up before the schedule (LrSchedule)
  double min_lr = 0;         // cosine's floor
  uint64_t seed = 1;
  Augmentation augment;  // of the training batches (data/augment.h); evaluation reads them as they are
  int data_threads = 2;  // the loader's workers (data/batch_loader.h): decode and augment in parallel
  bool evaluate = true;
  std::string save_path;         // non-empty: write a checkpoint here at the end of run()
  int64_t checkpoint_every = 0;  // > 0: also every N steps (of the whole run) to save_path
  // A NaN or Inf in the loss or a gradient: stop with an error naming the step and the layer, or
  // skip the step (no update) and go on.
  enum class OnNonFinite { kStop, kSkip };
  OnNonFinite on_nonfinite = OnNonFinite::kStop;
  // The stop message names `vdnn train`'s --on-nan skip only where the caller has that flag (not
  // plan's or profile's timing steps, nor Python).
  bool offers_on_nan_skip = false;
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
};

struct EpochResult {
  int epoch = 0;
  int64_t steps = 0;  // total so far
  double lr = 0;      // at the epoch's last step
  double train_loss = 0, train_accuracy = 0;
  double train_seconds = 0;  // this epoch's training time, evaluation excluded
  double images_per_second = 0;
  double data_wait_seconds = 0;  // of train_seconds, waiting for the loader's next batch
  EvalResult test;               // samples == 0 when not evaluated
};

struct TrainResult {
  std::vector<EpochResult> epochs;
  int64_t iterations = 0;
  double final_loss = 0;     // mean training loss of the last epoch
  double test_accuracy = 0;  // after the last epoch (0 if not evaluated)
  double images_per_second = 0;
  double train_seconds = 0;
  double data_wait_seconds = 0;  // of train_seconds, waiting for batches (the loader kept up if ~0)
  int64_t bad_images = 0;        // unreadable training images left out or replaced (--skip-bad-images)
  std::string weights_sha256;
  std::vector<std::string> skipped_steps;  // --on-nan skip: "step 12: ..." for each
  std::vector<std::string> class_names;    // the training data's (Dataset::class_names)
  std::vector<float> step_losses;          // every step's training loss (over every rank), in order
  std::vector<float> step_grad_norms;      // with clip_grad_norm: every step's global gradient norm, before clipping
};

// Where training is, after each step (for progress bars and periodic work such as checkpoints).
struct StepProgress {
  int64_t step = 0, total_steps = 0;  // steps done so far, and in the whole run
  int epoch = 0, epochs = 0;          // 1-based current epoch, and how many
  int64_t epoch_step = 0, steps_per_epoch = 0;
  double loss = 0, lr = 0;       // this step's
  double grad_norm = 0;          // with clip_grad_norm: this step's global gradient norm before clipping; else 0
  double elapsed_seconds = 0;    // training time since run() began (evaluation excluded)
  double data_wait_seconds = 0;  // of elapsed_seconds, waiting for the loader's batches
};

struct Checkpoint;  // runtime/checkpoint.h

// The ranges `vdnn train`'s flags and the Python API's keywords share (the rest: runtime/sgd.h).
inline constexpr int kMaxEpochs = 100000;
inline constexpr int64_t kMaxIterations = int64_t{1} << 40;
inline constexpr int kMaxDataThreads = 256;

// Throws vdnn::Error naming the option by `names` (util/option_names.h) when a setting is out of
// its range: epochs 1..kMaxEpochs, iterations and checkpoint_every 0..kMaxIterations (0: none),
// lr and the schedule (LrSchedule::check), momentum and weight_decay (check_sgd_settings), beta1,
// beta2 and eps (check_adamw_settings), clip_grad_norm (check_clip_grad_norm), data_threads
// 1..kMaxDataThreads. The Trainer checks its config with its Net's names, and that its optimizer
// is the one the Net was planned for.
void check_train_config(const TrainConfig& config, const OptionNames& names);

// The optimizer's settings of a TrainConfig (make_optimizer takes them).
OptimizerConfig optimizer_config(const TrainConfig& config);

// Throws vdnn::Error when the data's sample shape, class count or labels per sample do not fit the model.
void check_data_fits(const Graph& graph, const Dataset& data);
// Throws vdnn::Error when the model has no trainable parameter: training it would change nothing
// and report a loss as if it learned. train_batch() checks it; a caller of run() that trains (not
// one that times steps, planning/step_calibration.h) checks it first, as `vdnn train` and vdnn.train do.
void check_trainable(const Graph& graph);

class Trainer {
 public:
  Trainer(Net& net, TrainConfig config);
  TrainResult run(const Dataset& train, const Dataset* test,
                  const std::function<void(const EpochResult&)>& on_epoch = {});
  // `logits` (if given) receives every sample's logits, samples x classes, in the data's order.
  EvalResult evaluate(const Dataset& data, std::vector<float>* logits = nullptr);
  // The global gradient norm of the last step (before clipping) with clip_grad_norm; else 0.
  double last_grad_norm() const { return last_grad_norm_; }
  // Optimizer steps taken (AdamW's t), resumed ones included.
  int64_t optimizer_steps() const { return optimizer_->steps(); }
  // Continues a saved run: loads its weights, optimizer state and dropout counter into the Net, and run()
  // then starts at its step (the same epoch, its batches already done skipped, the same learning
  // rate). Throws vdnn::Error when its model, batch or seed differ from this run; run() throws
  // when the data gives another number of batches per epoch or the run ends before that step.
  void resume(const Checkpoint& checkpoint);
  // One training step outside run() (the Python API's own loop): `count` <= batch samples (plain
  // NCHW floats) and their labels go into the Net, then the forward, backward, finiteness check
  // and SGD update each of run()'s steps makes, at learning rate `lr`; `step` and `epoch` (0-based)
  // name it in errors. Returns its loss. Data parallel: a collective; first every rank checks that
  // every rank is in a train_step with the same step, sample count, lr and optimizer settings
  // (comm/rank_agreement.h), else every rank throws RanksDisagree before any other collective.
  float train_batch(const float* images, const int32_t* labels, int64_t count, double lr, int64_t step, int epoch = 0);
  // The forward and backward passes of such a step without its update (the Python API's
  // forward_backward): returns the loss and leaves the gradients in the Net. A loss or gradient
  // that is not finite throws vdnn::Error naming it, the running statistics put back as they were.
  // Data parallel: a collective, checked first as train_batch is ("forward_backward", the sample
  // count); the gradients (and running statistics) are all-reduced to their mean over the ranks
  // and the loss is the mean over the ranks, as a data-parallel step's; nothing is updated.
  float forward_backward(const float* images, const int32_t* labels, int64_t count);
  // Called after every training step, on the calling thread.
  void on_step(std::function<void(const StepProgress&)> hook) { on_step_ = std::move(hook); }

 private:
  struct Run;  // one run()'s loader, length, schedule and position (trainer.cc)
  std::vector<RankSetting> rank_settings(const Dataset& train, const Dataset* test) const;
  void check_resume_fits(const Run& run) const;
  EpochResult train_epoch(Run& run, int epoch, TrainResult& result);
  float train_step(int64_t step, int epoch, double lr, TrainResult& result);
  float train_step_on_ranks(int64_t step, int epoch, double lr, bool update);
  std::vector<RankSetting> optimizer_settings() const;
  void claim_updates();
  // step < 0: none; lr < 0: a step without an update (no learning rate or optimizer settings).
  void agree_on_step(const char* call, int64_t step, int64_t count, double lr);
  // The running statistics (batch norm's, which training forward passes update) as their device
  // bytes, by parameter index: a step that makes no update puts them back.
  using Statistics = std::vector<std::pair<size_t, std::vector<char>>>;
  Statistics running_statistics();
  void put_back(const Statistics& statistics);
  void save(Run& run);
  void update_bucket(const std::vector<size_t>& params);  // data parallel, on the compute stream
  void sum_over_ranks(double* values, int count);
  void finish(Run& run, const Dataset* test, TrainResult& result);
  // "" when the loss and the gradients are finite, else what is not; `grad`: the first gradient
  // holding a NaN or Inf (null: none).
  std::string nonfinite(float loss, const ParamTensor* grad);
  // What to try about a NaN or Inf, given how many updates the weights have had (0: as built or
  // loaded, so no learning rate is the cause).
  std::string nonfinite_remedy(int64_t updates_before) const;
  // Throws when an update has left a weight or running statistic NaN or Inf (`steps` made so far).
  void check_weights_finite(int64_t steps);

  std::function<void(const StepProgress&)> on_step_;
  Net& net_;
  TrainConfig config_;
  std::unique_ptr<Optimizer> optimizer_;
  double last_grad_norm_ = 0;
  std::string resume_path_;  // the checkpoint resumed from, for errors
  int64_t start_step_ = 0, resume_steps_per_epoch_ = 0;
  int64_t step_correct_ = 0;  // the last step's correct predictions, over every rank
  // The step the Program's update steps belong to (data parallel).
  int64_t step_index_ = 0;
  int step_epoch_ = 0;
  int64_t updates_before_step_ = 0;  // the updates made before step_index_ (data parallel)
  bool updating_ = true;  // false: the Program's update steps check their bucket and leave it (forward_backward)
};

}  // namespace vdnn
