// `vdnn load`: the data loader alone — reads (decodes, augments) batches as `vdnn train` would and
// discards them, to see whether the loader can keep up with training. The last line is JSON:
//   vdnn load --data /data/imagenet --input 3x224x224 --batch 64 --data-threads 2 --augment imagenet
//   {"images": 1280, "seconds": 4.1, "images_per_second": 312.2, "data_threads": 2, ...}
// Timing starts when the first batch has arrived (the workers' start-up, and the file-list scan,
// are not counted), as bench/torch_image_loader.py does for PyTorch's DataLoader.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "data/augment.h"
#include "data/batch_loader.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "data_flags.h"
#include "model_flags.h"
#include "numeric_flags.h"
#include "util/json_dump.h"

namespace vdnn::cli {
namespace {

struct LoadOptions {
  ModelFlags model{.name = "resnet18", .batch = 64};
  std::string data = "fashion-mnist", augment = "none", split = "train";
  int64_t batches = 0, synthetic_samples = 2048;
  int data_threads = 2, epochs = 1;
  uint64_t seed = 1;
  DataSource image_flags;  // --mean, --std, --skip-bad-images
};

int load(const LoadOptions& o) {
  const Graph graph = o.model.load().graph;
  const Augmentation augment = parse_augmentation(o.augment, "--augment");
  const bool train = o.split == "train";
  DataSource source = o.image_flags;
  source.data = o.data, source.synthetic_samples = o.synthetic_samples, source.seed = o.seed, source.augment = augment;
  const Dataset data = load_data(source, graph, train ? Split::kTrain : Split::kTest);
  if (const std::string line = adaptation_line({&data}); !line.empty()) std::printf("%s\n", line.c_str());
  BatchLoader loader(data, o.model.batch, /*shuffle=*/train, o.seed, {}, train ? augment : Augmentation{},
                     o.data_threads);
  int64_t images = 0, batches = 0;
  double seconds = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    loader.start_epoch(epoch);
    BatchLoader::BatchView batch;
    auto start = std::chrono::steady_clock::now();
    for (bool first = epoch == 0; loader.next(&batch); first = false) {
      if (first) {  // the clock starts once the first batch is there
        start = std::chrono::steady_clock::now();
      } else {
        images += batch.count;
      }
      if (o.batches > 0 && ++batches >= o.batches) break;
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.batches > 0 && batches >= o.batches) break;
  }
  const double rate = seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
  std::printf("%s (%s): %lld images in %.2f s after the first batch: %.1f images/s, %d loader threads\n",
              data.name.c_str(), o.split.c_str(), static_cast<long long>(images), seconds, rate, o.data_threads);
  if (loader.bad_images() > 0)
    std::printf("%lld unreadable images skipped\n", static_cast<long long>(loader.bad_images()));
  const nlohmann::json j = {{"loader", "vdnn"},
                            {"images", images},
                            {"seconds", seconds},
                            {"images_per_second", rate},
                            {"threads", o.data_threads},
                            {"batch", o.model.batch},
                            {"augment", augmentation_name(augment)},
                            {"bad_images", loader.bad_images()}};
  std::printf("%s\n", dump_json(j).c_str());
  return 0;
}

}  // namespace

Command add_load_command(CLI::App& app) {
  auto o = std::make_shared<LoadOptions>();
  app.add_option(
         "--data", o->data,
         "what `vdnn train --data` reads (an image folder, CIFAR, IDX, synthetic, a token file FILE.bin, a text "
         "FILE.txt)")
      ->capture_default_str();
  add_model_flags(app, o->model, {.model_help = "the model whose input the samples are shaped for", .classes = false});
  app.add_option("--split", o->split, "train (shuffled, augmented) or test")
      ->check(CLI::IsMember({"train", "test"}))
      ->capture_default_str();
  app.add_option("--data-threads", o->data_threads, "loader threads")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--augment", o->augment, "none, flip, cifar or imagenet (as `vdnn train`)")->capture_default_str();
  app.add_option("--epochs", o->epochs, "epochs to read")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--batches", o->batches, "stop after this many batches (0: every epoch in full)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--seed", o->seed, "seed of the order and the augmentation")->capture_default_str();
  app.add_option("--synthetic-samples", o->synthetic_samples, "samples for --data synthetic")
      ->check(CLI::Range(int64_t{1}, kMaxSyntheticSamples));
  add_image_folder_flags(app, o->image_flags);
  add_token_data_flags(app, o->image_flags);
  FlagRules rules(app);
  add_data_rules(rules, app, {.data = o->data, .flags = o->image_flags});
  // The test split is read as evaluation reads it: not augmented (imagenet's evaluation resize aside).
  rules.add({"--augment"}, {"with --split train (the test split is not augmented, except for imagenet's resize)",
                            [o] { return o->split == "train" || o->augment == "imagenet"; },
                            [o] { return "with --split " + o->split; }});
  rules.add({"--seed"}, {"with --split train or --data synthetic (it seeds the order, the augmentation and synthetic "
                         "data; the test split is read in order)",
                         [o] { return o->split == "train" || o->data == "synthetic"; },
                         [o] { return "with --split " + o->split + " and --data " + o->data; }});
  return {[o] { return load(*o); }, rules};
}

}  // namespace vdnn::cli
