// python/src/data.cc — the built-in data sources as NumPy (vdnn.load_data), the training order
// `vdnn train` visits them in (vdnn.batches: data/batch_loader.h), its learning rate (vdnn.lr_at:
// runtime/sgd.h's LrSchedule), and vdnn.train: Trainer::run over a built-in source with a
// per-step callback. A NumPy loop over batches() with lr_at's rates and Net.train_step makes the
// steps `vdnn train` makes, so it ends on the same weights_sha256.
#include <pybind11/stl.h>

#include <csignal>
#include <limits>
#include <mutex>
#include <optional>

#include "bindings.h"
#include "data/batch_loader.h"
#include "data/data_source.h"
#include "net_handle.h"
#include "runtime/net_settings.h"
#include "runtime/sgd.h"
#include "runtime/trainer.h"
#include "util/atomic_file.h"
#include "vdnn/error.h"

namespace vdnn::python {
namespace {

using DatasetPtr = std::shared_ptr<Dataset>;

// synthetic_samples: `vdnn train --synthetic-samples`'s range.
int64_t synthetic_samples_of(const py::object& samples) {
  return int_in_range(samples, 1, kMaxSyntheticSamples, "synthetic_samples");
}

DatasetPtr load_dataset(const py::object& model, const std::string& data, const std::string& split,
                        const py::object& synthetic_samples, const py::object& seed) {
  if (split != "train" && split != "test") VDNN_THROW("split '" << split << "': expected train or test");
  const DataSource source{data, synthetic_samples_of(synthetic_samples), seed_of(seed, "seed")};
  const std::shared_ptr<Model> m = as_model(model);
  py::gil_scoped_release release;
  return std::make_shared<Dataset>(
      load_data(source, m->loaded.graph, split == "train" ? Split::kTrain : Split::kTest));
}

// One epoch of a Dataset in the order training visits it; yields (x, y) copies.
class Batches {
 public:
  Batches(DatasetPtr data, int64_t batch, uint64_t seed, int epoch, bool shuffle, const Augmentation& augment)
      : data_(std::move(data)),
        loader_(*data_, batch, shuffle, seed, {process_communicator().rank(), process_communicator().size()}, augment),
        images_(static_cast<size_t>(batch * loader_.sample_floats())),
        labels_(static_cast<size_t>(batch * loader_.labels_per_sample())) {
    loader_.start_epoch(epoch);
  }
  int64_t size() const { return loader_.batches_per_epoch(); }
  // Thread-safe: two Python threads sharing one iterator each get their own batches (the loader
  // hands out one at a time; its buffers are copied out before the next thread may fill them).
  py::tuple next() {
    int64_t count = 0;
    bool more = false;
    std::vector<float> x;
    std::vector<int32_t> y;
    {
      py::gil_scoped_release release;  // before the lock: a thread holding it may be waiting for the GIL
      const std::lock_guard<std::mutex> one_at_a_time(next_);
      more = loader_.next(images_.data(), labels_.data(), &count);
      if (more) {
        x.assign(images_.begin(), images_.begin() + count * loader_.sample_floats());
        y.assign(labels_.begin(), labels_.begin() + count * loader_.labels_per_sample());
      }
    }
    if (!more) throw py::stop_iteration();
    // Token windows: (count, T) ids, as the model's per-sample input [T]; labels (count, T), each
    // position's next token (one label per sample: (count,)).
    const std::vector<int64_t> shape = data_->tokens
                                           ? std::vector<int64_t>{count, data_->channels}
                                           : std::vector<int64_t>{count, data_->channels, data_->height, data_->width};
    const int64_t per = loader_.labels_per_sample();
    py::array_t<int32_t> labels = per == 1 ? py::array_t<int32_t>(count) : py::array_t<int32_t>({count, per});
    std::copy(y.begin(), y.end(), labels.mutable_data());
    return py::make_tuple(to_numpy(x, shape), labels);
  }

 private:
  DatasetPtr data_;  // the loader reads it
  BatchLoader loader_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
  std::mutex next_;
};

double lr_at(const py::object& step, const py::object& epoch, double lr, const std::string& schedule,
             const py::object& total_steps, const py::object& step_epochs, double gamma,
             const py::object& warmup_steps, double min_lr) {
  constexpr int64_t kLargest = std::numeric_limits<int64_t>::max();
  const LrSchedule s{lr,
                     LrSchedule::parse(schedule, "schedule"),
                     int_for_library_check(total_steps, 1, kLargest, "total_steps"),
                     static_cast<int>(int_for_library_check(step_epochs, 1, kMaxStepEpochs, "step_epochs", 32)),
                     gamma,
                     int_for_library_check(warmup_steps, 0, kMaxWarmupSteps, "warmup_steps"),
                     min_lr};
  s.check(OptionNames{OptionNames::kKeywords});
  return s.at(int_for_library_check(step, 0, kLargest, "step"),
              static_cast<int>(int_for_library_check(epoch, 0, kMaxEpochs, "epoch", 32)));
}

py::dict step_dict(const StepProgress& p) {
  py::dict d;
  d["step"] = p.step;
  d["total_steps"] = p.total_steps;
  d["epoch"] = p.epoch;
  d["epochs"] = p.epochs;
  d["epoch_step"] = p.epoch_step;
  d["steps_per_epoch"] = p.steps_per_epoch;
  d["loss"] = p.loss;
  d["lr"] = p.lr;
  d["grad_norm"] = p.grad_norm;
  d["elapsed_seconds"] = p.elapsed_seconds;
  d["data_wait_seconds"] = p.data_wait_seconds;
  return d;
}

py::dict epoch_dict(const EpochResult& e) {
  py::dict d;
  d["epoch"] = e.epoch;
  d["steps"] = e.steps;
  d["lr"] = e.lr;
  d["train_loss"] = e.train_loss;
  d["train_accuracy"] = e.train_accuracy;
  d["train_seconds"] = e.train_seconds;
  d["images_per_second"] = e.images_per_second;
  d["data_wait_seconds"] = e.data_wait_seconds;
  if (e.test.samples > 0) {
    d["test_loss"] = e.test.loss;
    d["test_accuracy"] = e.test.accuracy;
  }
  return d;
}

// The Net vdnn.train trains: the one given (a batch, if given, must be its own), or a Net of
// `batch` (default 128) made from a model.
std::shared_ptr<NetHandle> net_to_train(const py::object& net_or_model, const py::object& batch) {
  if (!py::isinstance<NetHandle>(net_or_model))
    return make_net(net_or_model, batch.is_none() ? py::int_(128) : batch, "none", py::none(), py::int_(1), 0.9,
                    py::none(), "weights", "event", "vdnn", py::none(), "", false, py::none(), "fp32", "sgd", 0.9,
                    0.999, 1e-8, 0.0);
  auto h = net_or_model.cast<std::shared_ptr<NetHandle>>();
  if (!batch.is_none() && int_in_range(batch, 1, kMaxBatch, "batch") != h->net->batch())
    VDNN_THROW("batch " << batch.cast<int64_t>() << ": this Net was made for batch " << h->net->batch()
                        << " (a Net's batch is fixed: make one with vdnn.Net(model, batch=" << batch.cast<int64_t>()
                        << "), or leave batch out)");
  return h;
}

// vdnn.train: Trainer::run on a Net (or a Net built from a model with `batch`), a callback per step.
py::dict train(const py::object& net_or_model, const std::string& data, const py::object& iterations,
               const py::object& epochs, const py::object& batch, std::optional<double> lr,
               const std::string& schedule, const py::object& step_epochs, double gamma,
               const py::object& synthetic_samples, bool evaluate, const py::object& callback,
               const std::string& save, const std::string& augment, const py::object& warmup_steps, double min_lr) {
  const std::shared_ptr<NetHandle> h = net_to_train(net_or_model, batch);
  const int64_t samples = synthetic_samples_of(synthetic_samples);
  if (!callback.is_none() && !PyCallable_Check(callback.ptr())) VDNN_THROW("callback: expected a function of one dict");
  TrainConfig config = h->config;
  config.iterations = int_for_library_check(iterations, 0, kMaxIterations, "iterations");
  config.epochs = static_cast<int>(int_for_library_check(epochs, 1, kMaxEpochs, "epochs", 32));
  config.lr = lr.value_or(default_lr(config.optimizer));  // None: the Net's optimizer's (SGD 0.05, AdamW 1e-3)
  config.schedule = LrSchedule::parse(schedule, "schedule");
  config.step_epochs = static_cast<int>(int_for_library_check(step_epochs, 1, kMaxStepEpochs, "step_epochs", 32));
  config.gamma = gamma;
  config.warmup_steps = int_for_library_check(warmup_steps, 0, kMaxWarmupSteps, "warmup_steps");
  config.min_lr = min_lr;
  config.evaluate = evaluate;
  config.save_path = save;
  if (!save.empty()) check_can_create_file(save, "save=");  // before the training it would come after
  config.augment = parse_augmentation(augment, "augment");
  const DataSource source{data, samples, config.seed, config.augment};
  if (evaluate && !has_evaluation_split(source))  // ImageFolder(root): the CLI's --val-data has no keyword here
    VDNN_THROW("evaluate=True: '" << data << "' holds the class folders themselves (torchvision's ImageFolder "
                                  << "root), so nothing is held out to evaluate on; pass evaluate=False (and "
                                  << "net.infer on load_data of another folder)");
  const Graph& graph = h->net->graph();
  check_trainable(graph);  // as `vdnn train`: nothing to learn is refused, not "trained"
  TrainResult r;
  auto taken = h->lock();
  {
    py::gil_scoped_release release;
    const Dataset train_set = load_data(source, graph, Split::kTrain);
    const Dataset test_set = evaluate ? load_data(source, graph, Split::kTest) : Dataset{};
    Trainer trainer(*h->net, config);
    trainer.on_step([&](const StepProgress& p) {
      ++h->steps;  // the step is made: counted before a callback or Ctrl-C can end the run
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C: KeyboardInterrupt between steps
      if (callback.is_none()) return;
      // Between steps the Net is free: the callback may hand it to another thread (an executor
      // evaluating it) and wait for that, which under the lock deadlocked. Taken back after, with
      // the GIL released (as lock() waits), also when the callback raises.
      taken.unlock();
      struct TakeBack {
        std::unique_lock<std::recursive_mutex>& lock;
        ~TakeBack() {
          py::gil_scoped_release release;
          lock.lock();
        }
      } take_back{taken};
      try {
        callback(step_dict(p));
      } catch (const py::error_already_set&) {
        // This rank alone raised: the others would wait for it in the next step's collectives
        // until their timeout, though its process lives on (a caught exception, a debugger).
        if (h->net->ranks() > 1) h->net->options().comm->leave_run();
        throw;
      }
    });
    r = trainer.run(train_set, evaluate ? &test_set : nullptr);
  }
  py::dict d;
  d["iterations"] = r.iterations;
  d["final_loss"] = r.final_loss;
  d["test_accuracy"] = r.test_accuracy;
  d["images_per_second"] = r.images_per_second;
  d["train_seconds"] = r.train_seconds;
  d["data_wait_seconds"] = r.data_wait_seconds;
  d["bad_images"] = r.bad_images;
  d["weights_sha256"] = r.weights_sha256;
  py::list e;
  for (const EpochResult& x : r.epochs) e.append(epoch_dict(x));
  d["epochs"] = e;
  d["net"] = h;
  return d;
}

}  // namespace

void bind_data(py::module_& m) {
  py::class_<Dataset, DatasetPtr>(m, "Dataset", "Labelled samples in memory, normalized, NCHW.")
      .def_property_readonly("name", [](const Dataset& d) { return d.name; })
      .def_property_readonly("classes", [](const Dataset& d) { return d.classes; })
      .def("__len__", [](const Dataset& d) { return d.count; })
      .def_property_readonly(
          "images",
          [](const DatasetPtr& d) {
            if (d->reader)
              VDNN_THROW("dataset '" << d->name << "' is " << (d->tokens ? "token windows" : "an image folder")
                                     << ", read batch by batch: iterate vdnn.batches(dataset, batch) for its samples");
            return py::array_t<float>({d->count, d->channels, d->height, d->width}, d->images.data(), py::cast(d));
          },
          "float32 (count, C, H, W), a read-only view")
      .def_property_readonly(
          "labels",
          [](const DatasetPtr& d) {
            if (d->labels.empty() && d->count > 0)
              VDNN_THROW("dataset '" << d->name << "': its labels are made with each window (the next T tokens): "
                                     << "iterate vdnn.batches(dataset, batch) for them");
            return py::array_t<int32_t>({d->count}, d->labels.data(), py::cast(d));
          },
          "int32 (count,)")
      .def_property_readonly(
          "vocabulary", [](const Dataset& d) { return d.vocabulary; },
          "text read as characters: each token id's character (decodes generated ids); else []");
  m.def("load_data", &load_dataset, py::arg("model"), py::arg("data") = "fashion-mnist", py::arg("split") = "train",
        py::arg("synthetic_samples") = 2048, py::arg("seed") = 1,
        "`vdnn train --data`'s data for a model: 'fashion-mnist', 'synthetic' (synthetic_samples "
        "training samples shaped for the model, a quarter as many test samples, from seed) or a folder "
        "(CIFAR binary batches, IDX files, or image folders DIR/train/<class>/*.jpg, decoded batch by batch).");
  py::class_<Batches>(m, "Batches")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Batches::next)
      .def("__len__", &Batches::size);
  m.def(
      "batches",
      [](DatasetPtr data, const py::object& batch, const py::object& seed, const py::object& epoch, bool shuffle,
         const std::string& augment) {
        return std::make_unique<Batches>(std::move(data), int_in_range(batch, 1, kMaxBatch, "batch"),
                                         seed_of(seed, "seed"),
                                         static_cast<int>(int_in_range(epoch, 0, kMaxEpochs, "epoch")), shuffle,
                                         parse_augmentation(augment, "augment"));
      },
      py::arg("data"), py::arg("batch"), py::arg("seed") = 1, py::arg("epoch") = 0, py::arg("shuffle") = true,
      py::arg("augment") = "none", py::keep_alive<0, 1>(),
      "Epoch `epoch` of data as (x float32 NCHW, y int32) batches in training's order (shuffled from "
      "(seed, epoch), the last partial batch dropped; shuffle=False: in order, the partial batch kept), "
      "augmented as `vdnn train --augment` does (none, flip or cifar). "
      "Under mpirun: this rank's share of each global batch of ranks() x batch samples.");
  m.def("lr_at", &lr_at, py::arg("step"), py::arg("epoch"), py::arg("lr") = 0.05, py::arg("schedule") = "cosine",
        py::arg("total_steps") = 1, py::arg("step_epochs") = 5, py::arg("gamma") = 0.1, py::arg("warmup_steps") = 0,
        py::arg("min_lr") = 0.0,
        "The learning rate `vdnn train` uses at 0-based step `step` of epoch `epoch` (warm-up: step < "
        "warmup_steps runs at lr * (step + 1) / (warmup_steps + 1); cosine then decays to min_lr at total_steps; "
        "step multiplies by gamma every step_epochs epochs).");
  m.def("train", &train, py::arg("net"), py::arg("data") = "fashion-mnist", py::arg("iterations") = 0,
        py::arg("epochs") = 1, py::arg("batch") = py::none(), py::arg("lr") = py::none(),
        py::arg("schedule") = "cosine", py::arg("step_epochs") = 5, py::arg("gamma") = 0.1,
        py::arg("synthetic_samples") = 2048, py::arg("evaluate") = false, py::arg("callback") = py::none(),
        py::arg("save") = "", py::arg("augment") = "none", py::arg("warmup_steps") = 0, py::arg("min_lr") = 0.0,
        "`vdnn train` on a built-in data source: a vdnn.Net (its seed, momentum and weight decay; batch, if "
        "given, must be the Net's) or a model (a Net of `batch`, default 128, is made: result['net']); "
        "callback(dict) after every step (step, "
        "total_steps, epoch, epochs, epoch_step, steps_per_epoch, loss, lr, grad_norm, elapsed_seconds); "
        "lr None: the Net's optimizer's default (sgd 0.05, adamw 0.001, torch.optim.AdamW's); "
        "warmup_steps and min_lr: the schedule's warm-up and cosine floor (lr_at); augment: "
        "none, flip or cifar, as `vdnn train --augment`. Returns the run's figures and weights_sha256.");
}

}  // namespace vdnn::python
