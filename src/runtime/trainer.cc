#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string_view>

#include "comm/rank_agreement.h"
#include "data/batch_loader.h"
#include "runtime/checkpoint.h"
#include "runtime/host_optimizer_step.h"
#include "util/number_text.h"
#include "util/sha256.h"
#include "vdnn/error.h"

namespace vdnn {

using Clock = std::chrono::steady_clock;

namespace {

// What tells data sets apart: the count, the sample shape, the classes, a digest of the labels and the
// normalisation, and of the samples themselves where they are in memory (Fashion-MNIST, CIFAR, .npy: std::hash over
// the bytes, a non-cryptographic hash, since ranks only need to tell a mistake apart, not an adversary). A reader's
// samples (image folders, token files) are read as each batch needs them, so they are told apart by their count and
// labels alone.
std::string data_identity(const Dataset& d) {
  Sha256 digest;
  digest.update(d.labels.data(), d.labels.size() * sizeof(int32_t));
  digest.update(d.zero_pixel.data(), d.zero_pixel.size() * sizeof(float));
  const size_t samples = std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(d.images.data()), d.images.size() * sizeof(float)));
  return VDNN_MSG(d.count << " samples of " << d.channels << "x" << d.height << "x" << d.width << ", " << d.classes
                          << " classes, sha256 " << digest.hex_digest().substr(0, 12) << ", samples hash " << std::hex
                          << samples);
}

}  // namespace

void check_train_config(const TrainConfig& c, const OptionNames& names) {
  if (c.epochs < 1 || c.epochs > kMaxEpochs)
    VDNN_THROW(names("epochs") << " " << c.epochs << ": expected 1 to " << kMaxEpochs);
  if (c.iterations < 0 || c.iterations > kMaxIterations)
    VDNN_THROW(names("iterations") << " " << c.iterations << ": expected 0 (whole epochs) to " << kMaxIterations);
  if (c.checkpoint_every < 0 || c.checkpoint_every > kMaxIterations)
    VDNN_THROW(names("checkpoint_every") << " " << c.checkpoint_every << ": expected 0 (none) to " << kMaxIterations);
  LrSchedule{c.lr, c.schedule, 1, c.step_epochs, c.gamma, c.warmup_steps, c.min_lr}.check(names);
  check_sgd_settings(c.momentum, c.weight_decay, names);
  check_adamw_settings(c.beta1, c.beta2, c.eps, names);
  check_clip_grad_norm(c.clip_grad_norm, names);
  if (c.data_threads < 1 || c.data_threads > kMaxDataThreads)
    VDNN_THROW(names("data_threads") << " " << c.data_threads << ": expected 1 to " << kMaxDataThreads);
}

OptimizerConfig optimizer_config(const TrainConfig& c) {
  return {c.optimizer, c.momentum, c.weight_decay, c.weight_decay_on, c.beta1, c.beta2, c.eps};
}

Trainer::Trainer(Net& net, TrainConfig config)
    : net_(net), config_(config), optimizer_(make_optimizer(optimizer_config(config))) {
  const OptionNames& names = net_.options().names;
  check_train_config(config_, names);
  if (config_.optimizer != net_.options().optimizer)
    VDNN_THROW(names("optimizer") << " " << to_string(config_.optimizer) << ": the Net was planned for "
                                  << to_string(net_.options().optimizer)
                                  << " (NetOptions::optimizer), whose state it keeps in its arena; build it with "
                                  << to_string(config_.optimizer));
  if (net_.ranks() == 1) return;
  if (config_.clip_grad_norm > 0)
    VDNN_THROW(names("clip_grad_norm") << " needs one rank: with " << net_.ranks()
                                       << " ranks each gradient bucket is updated as soon as its all-reduce ends, "
                                          "before the later buckets' gradients (which the global norm needs) exist");
  if (config_.on_nonfinite == TrainConfig::OnNonFinite::kSkip)
    VDNN_THROW("--on-nan skip needs one rank: with " << net_.ranks()
                                                     << " ranks each gradient bucket is updated as soon as its "
                                                        "all-reduce ends, before later buckets are checked; use "
                                                        "--on-nan stop (the default)");
  // The update every step makes (comm/rank_agreement.h); a Python loop of train_step calls checks
  // it again with each step (agree_on_step).
  check_ranks_agree(*net_.options().comm, optimizer_settings());
  claim_updates();
}

// The optimizer's settings, as every rank must hold them.
std::vector<RankSetting> Trainer::optimizer_settings() const {
  const OptionNames& names = net_.options().names;
  return {{names("optimizer"), to_string(config_.optimizer)},
          {names("momentum"), exact_text(config_.momentum)},
          {names("weight_decay"), exact_text(config_.weight_decay)},
          {names("weight_decay_on"), SgdConfig::name(config_.weight_decay_on)},
          {names("beta1"), exact_text(config_.beta1)},
          {names("beta2"), exact_text(config_.beta2)},
          {names("eps"), exact_text(config_.eps)}};
}

// The Net's bucket updates are this Trainer's: another Trainer of the same Net (one vdnn.train
// made, now gone) may have taken them since.
void Trainer::claim_updates() {
  net_.set_update([this](const std::vector<size_t>& params) { update_bucket(params); });
}

// Data parallel, before a step outside run() (the Python API's train_step and forward_backward):
// every rank makes the same call, at the same step, on as many samples, with the same learning
// rate and optimizer, else every rank refuses before the step's collectives (comm/rank_agreement.h).
void Trainer::agree_on_step(const char* call, int64_t step, int64_t count, double lr) {
  std::vector<RankSetting> settings{{"the step", step < 0 ? "none" : std::to_string(step + 1)},
                                    {"the sample count", std::to_string(count)}};
  if (lr >= 0) {
    settings.push_back({net_.options().names("lr"), exact_text(lr)});
    const std::vector<RankSetting> optimizer = optimizer_settings();
    settings.insert(settings.end(), optimizer.begin(), optimizer.end());
  }
  check_ranks_agree(*net_.options().comm, settings, call);
}

// Sums over the ranks (nothing to do with one).
void Trainer::sum_over_ranks(double* values, int count) {
  if (net_.ranks() > 1) net_.options().comm->sum_host(values, count);
}

// One gradient bucket, all-reduced: every rank holds the same sums, so every rank takes the same
// decision here. A NaN or Inf stops the run before this bucket's update (earlier buckets of the
// step are already updated: the run ends with an error either way).
void Trainer::update_bucket(const std::vector<size_t>& params) {
  for (size_t i : params) {
    ParamTensor& p = net_.params()[i];
    if (!net_.backend().all_finite(p.grad, p.bytes))
      VDNN_THROW("step " << step_index_ + 1 << " (epoch " << step_epoch_ + 1 << "): the gradient of '" << p.name
                         << "' (layer '" << net_.graph().nodes()[p.node].layer->name()
                         << "') summed over the ranks holds NaN or Inf; training stopped ("
                         << nonfinite_remedy(updates_before_step_) << ")");
    if (updating_) optimizer_->update(net_.backend(), p);
  }
}

void check_data_fits(const Graph& g, const Dataset& data) {
  const Shape sample = g.input_shape().rank() == 3 ? Shape{data.channels, data.height, data.width}
                                                   : Shape{data.channels * data.height * data.width};
  if (!(sample == g.input_shape()))
    VDNN_THROW("data '" << data.name << "' has " << Shape{data.channels, data.height, data.width}.to_string()
                        << " samples but model '" << g.name() << "' expects " << g.input_shape().to_string()
                        << " (use --data synthetic, or --input to resize the model)");
  if (data.classes > g.classes())
    VDNN_THROW("data '" << data.name << "' has " << data.classes << " classes but model '" << g.name() << "' predicts "
                        << g.classes());
  // Token windows label every position (the next token): a loss over [T, V] logits reads T labels
  // per sample (Graph::labels_per_sample), any other loss one. Data of the other kind would have
  // the loss read past its labels, or take the first positions' labels as whole samples' classes.
  if (data.labels_per_sample != g.labels_per_sample())
    VDNN_THROW("data '" << data.name << "' has " << data.labels_per_sample << " label(s) per sample"
                        << (data.labels_per_sample > 1 ? " (token windows: the next token at each position)" : "")
                        << " but model '" << g.name() << "' reads " << g.labels_per_sample()
                        << (g.labels_per_sample() > 1 ? " (one per token: its loss reads [T, vocabulary] logits); "
                                                        "train it on token data (a .bin or .txt file)"
                                                      : "; token data trains a model whose loss reads [T, vocabulary] "
                                                        "logits (token_cross_entropy)"));
}

void check_trainable(const Graph& g) {
  if (g.parameter_count(/*trainable_only=*/true) == 0)
    VDNN_THROW("model '" << g.name() << "' has no trainable parameters (no conv, fc or batch_norm layer): training "
                         << "would change nothing, and its loss and accuracy would be those of its fixed function");
}

void Trainer::resume(const Checkpoint& checkpoint) {
  check_resumable(checkpoint, net_.graph().name(), net_.batch(), config_.seed);
  check_same_decay_rule(checkpoint, config_);
  check_same_augmentation(checkpoint, config_);
  check_same_ranks(checkpoint, net_.ranks());
  restore_checkpoint(checkpoint, net_);
  optimizer_->set_steps(checkpoint.optimizer_steps);
  resume_path_ = checkpoint.file.path;
  start_step_ = checkpoint.position.step;
  resume_steps_per_epoch_ = checkpoint.position.steps_per_epoch;
}

namespace {

// Logits that are NaN or infinite from finite inputs: the inputs or the weights overflow float32
// somewhere in the forward pass (3e38 doubled is infinite). Their classes, loss and accuracy would be
// meaningless numbers, so an evaluation that meets one is refused instead of reported.
struct NonFiniteLogits {
  int64_t samples = 0;    // samples with a NaN or infinite logit
  int64_t first = -1;     // the first of them, numbered in this rank's evaluation order
  float first_value = 0;  // one of its non-finite logits

  // The logits of one batch of `count` samples (each sample one row, or one per token) whose first
  // sample is number `offset`.
  void add(const std::vector<float>& logits, int64_t count, int64_t offset) {
    const size_t per_sample = logits.size() / static_cast<size_t>(count);
    for (int64_t n = 0; n < count; ++n) {
      const float* row = logits.data() + n * per_sample;
      const float* bad = std::find_if(row, row + per_sample, [](float v) { return !std::isfinite(v); });
      if (bad == row + per_sample) continue;
      if (samples++ == 0) first = offset + n, first_value = *bad;
    }
  }

  [[noreturn]] void refuse(int64_t total, const std::string& data, int ranks) const {
    std::string which = first >= 0 && ranks == 1
                            ? VDNN_MSG(" (the first: sample " << first << ", a logit of " << first_value << ")")
                            : std::string();
    VDNN_THROW("evaluating " << (data.empty() ? std::string("the data") : "'" + data + "'") << ": " << total
                             << " sample(s) gave logits that are NaN or infinite" << which
                             << ": the inputs or the weights overflow float32 in the forward pass; expected inputs "
                                "and weights that give finite logits");
  }
};

}  // namespace

EvalResult Trainer::evaluate(const Dataset& data, std::vector<float>* logits) {
  check_data_fits(net_.graph(), data);
  VDNN_CHECK(!logits || net_.ranks() == 1, "per-sample logits are collected by one rank only");
  BatchLoader loader(data, net_.batch(), /*shuffle=*/false, config_.seed, {net_.rank(), net_.ranks()},
                     /*augment=*/{}, config_.data_threads);
  loader.start_epoch(0);
  int64_t right = 0;
  EvalResult r;
  double loss_sum = 0;
  NonFiniteLogits nonfinite;
  BatchLoader::BatchView batch;
  while (loader.next(&batch)) {
    const int64_t count = batch.count;
    net_.set_batch(batch.images, batch.labels, count);
    loader.release();  // set_batch copied it
    loss_sum += static_cast<double>(net_.forward(/*training=*/false)) * count;
    right += net_.correct();
    nonfinite.add(net_.logits(), count, r.samples);
    if (logits) logits->insert(logits->end(), net_.logits().begin(), net_.logits().end());
    r.samples += count;
  }
  double sums[4] = {loss_sum, static_cast<double>(right), static_cast<double>(r.samples),
                    static_cast<double>(nonfinite.samples)};
  sum_over_ranks(sums, 4);  // every rank sees every rank's count, so every rank refuses together
  if (sums[3] > 0) nonfinite.refuse(static_cast<int64_t>(sums[3]), data.name, net_.ranks());
  loss_sum = sums[0];
  right = static_cast<int64_t>(sums[1]);
  r.samples = static_cast<int64_t>(sums[2]);
  r.loss = loss_sum / static_cast<double>(r.samples);
  // Net::correct() counts labels: one per sample, or one per token (Graph::labels_per_sample).
  const double labels = static_cast<double>(r.samples * net_.graph().labels_per_sample());
  r.accuracy = static_cast<double>(right) / labels;
  return r;
}

// What is not finite after a step's backward, or "" when the loss and every gradient are finite.
std::string Trainer::nonfinite(float loss, const ParamTensor* grad) {
  if (std::isfinite(loss) && !grad) return "";
  std::string what = std::isfinite(loss) ? std::string("the loss is finite") : VDNN_MSG("the loss is " << loss);
  if (grad)
    what += VDNN_MSG(", the gradient of '" << grad->name << "' (layer '"
                                           << net_.graph().nodes()[grad->node].layer->name() << "') holds NaN or Inf");
  else
    what += ", every gradient is finite";
  return what;
}

std::string Trainer::nonfinite_remedy(int64_t updates_before) const {
  const OptionNames& names = net_.options().names;
  constexpr const char* kNotTheRate =
      " is not the cause: the model or its data computes it; check the model's attributes, its initial weights and the "
      "data";
  // Learning rate 0 (`plan`'s and `profile`'s timing steps, which have no --lr) never moves a weight.
  if (config_.lr == 0) return std::string("the steps run at learning rate 0, so the learning rate") + kNotTheRate;
  if (updates_before > 0) return "lower " + names("lr");
  return "no update has been made yet, so " + names("lr") + kNotTheRate;
}

// An update that overflows float32 (a learning rate far too large for the gradients) leaves weights
// that are NaN or Inf while every gradient was finite; the next step's loss would say so, but the
// last step's would be saved and reported with exit 0. One pass over the weights, on the compute
// stream, before each checkpoint, after each epoch and after each train_batch.
void Trainer::check_weights_finite(int64_t steps) {
  const ParamTensor* bad = nullptr;
  net_.run_on_compute([&] { bad = net_.first_nonfinite_weight(); });
  if (bad)
    VDNN_THROW("after step " << steps << "'s update, '" << bad->name << "' (layer '"
                             << net_.graph().nodes()[bad->node].layer->name()
                             << "') holds NaN or Inf, though every gradient was finite: the update overflowed; "
                                "training stopped (lower "
                             << net_.options().names("lr") << ")");
}

// One run(): the loader and its buffers, how long the run is, its learning rate, and where it is.
struct Trainer::Run {
  Run(const Dataset& train, int64_t batch, const TrainConfig& c, int64_t start_step, Shard shard)
      : loader(train, batch, /*shuffle=*/true, c.seed, shard, c.augment, c.data_threads),
        per_epoch(loader.batches_per_epoch()),
        epochs(c.iterations > 0 ? static_cast<int>((c.iterations + per_epoch - 1) / per_epoch) : c.epochs),
        total(c.iterations > 0 ? c.iterations : per_epoch * epochs),
        schedule{c.lr, c.schedule, total, c.step_epochs, c.gamma, c.warmup_steps, c.min_lr},
        step(start_step),
        class_names(train.class_names) {}
  BatchLoader loader;
  const int64_t per_epoch;  // batches
  const int epochs;
  const int64_t total;  // steps of the whole run
  const LrSchedule schedule;
  int64_t step;             // steps done
  int64_t saved_step = -1;  // the step the --save checkpoint holds
  const std::vector<std::string>& class_names;  // the training data's, for checkpoints
};

// What every rank's run() must hold alike beyond its Net's settings and its update (the
// constructor's check, comm/rank_agreement.h): the learning rate and its schedule, the run's
// length and evaluations, the data, where the run starts.
std::vector<RankSetting> Trainer::rank_settings(const Dataset& train, const Dataset* test) const {
  const OptionNames& names = net_.options().names;
  const TrainConfig& c = config_;
  const bool evaluating = test && c.evaluate;
  return {{names("lr"), exact_text(c.lr)},
          {names("schedule"), LrSchedule::name(c.schedule)},
          {names("warmup_steps"), std::to_string(c.warmup_steps)},
          {names("min_lr"), exact_text(c.min_lr)},
          {names("step_epochs"), std::to_string(c.step_epochs)},
          {names("gamma"), exact_text(c.gamma)},
          {names("epochs"), std::to_string(c.epochs)},
          {names("iterations"), std::to_string(c.iterations)},
          {names("augment"), augmentation_name(c.augment)},
          {names("evaluate"), evaluating ? "evaluation" : "no evaluation"},
          {"the data", data_identity(train)},
          {"the test data", evaluating ? data_identity(*test) : "none"},
          {"the step resumed from", std::to_string(start_step_)},
          {"the starting weights", net_.weights_sha256().substr(0, 16)}};
}

TrainResult Trainer::run(const Dataset& train, const Dataset* test,
                         const std::function<void(const EpochResult&)>& on_epoch) {
  check_data_fits(net_.graph(), train);
  if (net_.ranks() > 1) check_ranks_agree(*net_.options().comm, rank_settings(train, test));
  if (config_.checkpoint_every > 0 && config_.save_path.empty())
    VDNN_THROW("--checkpoint-every " << config_.checkpoint_every << " needs --save FILE.safetensors (where to write)");
  Run run(train, net_.batch(), config_, start_step_, {net_.rank(), net_.ranks()});
  check_resume_fits(run);
  TrainResult result;
  result.class_names = train.class_names;
  for (int epoch = static_cast<int>(run.step / run.per_epoch); epoch < run.epochs && run.step < run.total; ++epoch) {
    EpochResult e = train_epoch(run, epoch, result);
    check_weights_finite(run.step);
    if (test && config_.evaluate) e.test = evaluate(*test);
    result.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
  }
  finish(run, test, result);
  return result;
}

// A resumed run must cut its data into the checkpoint's epochs and not end before its step.
void Trainer::check_resume_fits(const Run& run) const {
  if (resume_steps_per_epoch_ && resume_steps_per_epoch_ != run.per_epoch)
    VDNN_THROW("--resume " << resume_path_ << ": the checkpoint's data gave " << resume_steps_per_epoch_
                           << " batches per epoch, this run's data gives " << run.per_epoch
                           << " (the training data differs)");
  if (start_step_ > run.total)
    VDNN_THROW("--resume " << resume_path_ << ": the checkpoint is at step " << start_step_
                           << " but this run ends at step " << run.total << " (raise --epochs or --iterations)");
}

// The steps of one epoch (after a resume, the rest of it): its loss, accuracy and time. The
// training seconds and images are added to `result` (images_per_second sums images until finish).
EpochResult Trainer::train_epoch(Run& run, int epoch, TrainResult& result) {
  EpochResult e;
  e.epoch = epoch + 1;
  const int64_t done = run.step - epoch * run.per_epoch;  // batches of this epoch before a resume
  run.loader.start_epoch(epoch, done);
  double loss_sum = 0;
  int64_t right = 0, seen = 0;
  const auto start = Clock::now();
  const double waited_before = run.loader.waited_seconds();
  int64_t epoch_step = done;
  BatchLoader::BatchView batch;
  while (run.step < run.total && run.loader.next(&batch)) {
    const int64_t count = batch.count;
    net_.set_batch(batch.images, batch.labels, count);
    run.loader.release();  // set_batch copied it
    e.lr = run.schedule.at(run.step, epoch);
    const float loss = train_step(run.step, epoch, e.lr, result);
    result.step_losses.push_back(loss);
    if (config_.clip_grad_norm > 0) result.step_grad_norms.push_back(static_cast<float>(last_grad_norm_));
    loss_sum += loss;
    right += step_correct_;
    seen += count * net_.ranks();
    ++run.step;
    ++epoch_step;
    if (config_.checkpoint_every > 0 && run.step % config_.checkpoint_every == 0) save(run);
    if (on_step_)
      on_step_({run.step, run.total, epoch + 1, run.epochs, epoch_step,
                std::min(run.per_epoch, run.total - (run.step - epoch_step)), loss, e.lr, last_grad_norm_,
                result.train_seconds + std::chrono::duration<double>(Clock::now() - start).count(),
                result.data_wait_seconds + run.loader.waited_seconds() - waited_before});
  }
  e.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  e.data_wait_seconds = run.loader.waited_seconds() - waited_before;
  result.data_wait_seconds += e.data_wait_seconds;
  result.bad_images = run.loader.bad_images();
  const int64_t batches = seen / (net_.batch() * net_.ranks());
  e.steps = run.step;
  e.train_loss = batches ? loss_sum / static_cast<double>(batches) : 0.0;
  e.train_accuracy =
      seen ? static_cast<double>(right) / static_cast<double>(seen * net_.graph().labels_per_sample()) : 0.0;
  e.images_per_second = e.train_seconds > 0 ? seen / e.train_seconds : 0.0;
  result.train_seconds += e.train_seconds;
  result.images_per_second += seen;  // summed here, divided in finish()
  return e;
}

Trainer::Statistics Trainer::running_statistics() {
  Statistics statistics;
  for (size_t i = 0; i < net_.params().size(); ++i) {
    const ParamTensor& p = net_.params()[i];
    if (p.spec.trainable) continue;
    statistics.emplace_back(i, std::vector<char>(p.bytes));
    net_.backend().download(statistics.back().second.data(), p.data, p.bytes);
  }
  return statistics;
}

void Trainer::put_back(const Statistics& statistics) {
  for (const auto& [i, bytes] : statistics) net_.backend().upload(net_.params()[i].data, bytes.data(), bytes.size());
}

// One SGD step on the batch the Net holds, at learning rate `lr`; returns its loss. A NaN or Inf
// in the loss or a gradient makes no update and puts back the running statistics the forward pass
// changed; then the run stops with an error, or (--on-nan skip) the step is listed in `result`.
float Trainer::train_step(int64_t step, int epoch, double lr, TrainResult& result) {
  if (net_.ranks() > 1) return train_step_on_ranks(step, epoch, lr, /*update=*/true);
  const int64_t updates_before = optimizer_->steps();
  const auto statistics = running_statistics();
  const float loss = net_.forward(/*training=*/true);
  net_.backward();
  step_correct_ = net_.correct();
  // Check and update in one trip to the compute stream: an OpenMP region on this thread would
  // start a second thread team that spins against the compute stream's on the same cores.
  std::string bad;
  float grad_scale = 1.0f;
  const bool on_device = !net_.state_on_host();  // else the host updates after this trip (host_optimizer_step.h)
  net_.run_on_compute([&] {
    if (config_.clip_grad_norm <= 0) {
      bad = nonfinite(loss, net_.first_nonfinite_gradient());
      if (bad.empty() && on_device) optimizer_->step(net_.backend(), net_.params(), lr, 1.0f);
      return;
    }
    // torch.nn.utils.clip_grad_norm_, folded into the update kernel; its one pass over the
    // gradients finds a NaN or Inf too (a gradient's squares are then not finite).
    const std::vector<double> squares = gradient_squares(net_.backend(), net_.params());
    const auto first_bad = std::find_if(squares.begin(), squares.end(), [](double s) { return !std::isfinite(s); });
    bad = nonfinite(loss, first_bad == squares.end() ? nullptr : &net_.params()[first_bad - squares.begin()]);
    if (!bad.empty()) return;
    last_grad_norm_ = global_grad_norm(squares);
    grad_scale = clip_scale(config_.clip_grad_norm, last_grad_norm_);
    if (on_device) optimizer_->step(net_.backend(), net_.params(), lr, grad_scale);
  });
  if (bad.empty() && !on_device) {
    optimizer_->begin_step(lr, grad_scale);
    host_optimizer_step(net_, *optimizer_);
  }
  if (bad.empty()) return loss;
  put_back(statistics);
  if (config_.on_nonfinite != TrainConfig::OnNonFinite::kSkip)
    VDNN_THROW("step " << step + 1 << " (epoch " << epoch + 1 << "): " << bad << "; training stopped before the update ("
                       << nonfinite_remedy(updates_before)
                       << (config_.offers_on_nan_skip ? ", or --on-nan skip to skip such steps" : "") << ")");
  result.skipped_steps.push_back(VDNN_MSG("step " << step + 1 << ": " << bad));
  return loss;
}

// Data parallel: the Program all-reduces and updates (update_bucket); the figures are global.
// Without `update` (forward_backward) the buckets are all-reduced and checked but not applied.
float Trainer::train_step_on_ranks(int64_t step, int epoch, double lr, bool update) {
  step_index_ = step, step_epoch_ = epoch;
  claim_updates();
  updates_before_step_ = optimizer_->steps();
  if (update) optimizer_->begin_step(lr);  // the Program's update steps update each bucket at this step
  updating_ = update;
  const float loss = net_.forward(/*training=*/true);
  net_.backward();
  double sums[2] = {loss, static_cast<double>(net_.correct())};
  sum_over_ranks(sums, 2);
  step_correct_ = static_cast<int64_t>(sums[1]);
  const float mean = static_cast<float>(sums[0] / net_.ranks());
  if (!std::isfinite(mean))
    VDNN_THROW("step " << step + 1 << " (epoch " << epoch + 1 << "): the loss averaged over the ranks is " << mean
                       << " (its gradients were finite and are " << (update ? "applied" : "left in the Net")
                       << "); training stopped (" << nonfinite_remedy(updates_before_step_) << ")");
  return mean;
}

float Trainer::train_batch(const float* images, const int32_t* labels, int64_t count, double lr, int64_t step,
                           int epoch) {
  check_trainable(net_.graph());
  check_lr(lr, net_.options().names);
  if (net_.ranks() > 1) agree_on_step("train_step", step, count, lr);
  net_.set_batch(images, labels, count);
  TrainResult unused;  // skipped steps (--on-nan skip) are not collected outside run()
  const float loss = train_step(step, epoch, lr, unused);
  check_weights_finite(step + 1);
  return loss;
}

float Trainer::forward_backward(const float* images, const int32_t* labels, int64_t count) {
  if (net_.ranks() > 1) {  // the gradients and the loss over every rank, no update
    agree_on_step("forward_backward", -1, count, -1);
    net_.set_batch(images, labels, count);
    return train_step_on_ranks(step_index_, step_epoch_, 0, /*update=*/false);
  }
  net_.set_batch(images, labels, count);
  const auto statistics = running_statistics();
  const float loss = net_.forward(/*training=*/true);
  net_.backward();
  std::string bad;
  net_.run_on_compute([&] { bad = nonfinite(loss, net_.first_nonfinite_gradient()); });
  if (bad.empty()) return loss;
  put_back(statistics);
  VDNN_THROW(bad << " (the running statistics are left as they were)");
}

// Writes the --save checkpoint at the run's current step.
void Trainer::save(Run& run) {
  check_weights_finite(run.step);
  if (net_.rank() == 0)  // every rank holds the same weights: one writes them
    save_checkpoint(config_.save_path, net_, config_, {run.step, run.per_epoch, run.total, optimizer_->steps()},
                    run.class_names);
  run.saved_step = run.step;
}

// The run's totals, the weights' hash, and the final checkpoint unless the last step saved one.
void Trainer::finish(Run& run, const Dataset* test, TrainResult& result) {
  result.iterations = run.step;
  result.images_per_second = result.train_seconds > 0 ? result.images_per_second / result.train_seconds : 0.0;
  if (!result.epochs.empty()) {
    result.final_loss = result.epochs.back().train_loss;
    result.test_accuracy = result.epochs.back().test.accuracy;
  } else if (test && config_.evaluate) {  // resumed from a checkpoint at the run's last step
    result.test_accuracy = evaluate(*test).accuracy;
  }
  result.weights_sha256 = net_.weights_sha256();
  if (!config_.save_path.empty() && run.saved_step != run.step) save(run);
}

}  // namespace vdnn
