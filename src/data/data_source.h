// data/data_source.h — what the CLI's --data flag names: Fashion-MNIST, synthetic data shaped for
// the model, or a folder: CIFAR-10/100's binary batches (data/cifar.h), image folders
// (data/image_folder.h) or Fashion-MNIST-style IDX files.
//
// Model: "fashion-mnist" reads kFashionMnistDefaultDir, any other text but "synthetic" is a folder,
// read as CIFAR when it holds CIFAR's files (is_cifar_folder), as image folders when it has a
// train/ subfolder of class folders (training: DIR/train, evaluation: DIR/val, else DIR/test;
// samples decoded at the model's input size, with `augment`'s recipe: evaluation resizes by
// 256/224 before its center crop under "imagenet", by 1 otherwise), else as IDX files.
// "synthetic" makes `synthetic_samples` training samples shaped and labelled for the model, and a
// test split a quarter that size (at least 1) over the same classes, both from `seed`
// (data/synthetic.h), so `vdnn train` and `vdnn infer` with the same flags see the same data.
//
//   DataSource source{.data = "synthetic", .synthetic_samples = 256, .seed = 1};
//   Dataset train = load_data(source, graph, Split::kTrain);
//   Dataset test = load_data(source, graph, Split::kTest);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "data/augment.h"
#include "data/dataset.h"

namespace vdnn {

// The most samples --data synthetic makes (`vdnn train --synthetic-samples`, the Python API's
// synthetic_samples).
inline constexpr int64_t kMaxSyntheticSamples = int64_t{1} << 30;

struct DataSource {
  std::string data = "fashion-mnist";  // fashion-mnist | synthetic | a folder (CIFAR or IDX)
  int64_t synthetic_samples = 2048;
  uint64_t seed = 1;
  Augmentation augment;          // image folders: the evaluation recipe follows the training one
  bool skip_bad_images = false;  // image folders: unreadable files left out or replaced, with a warning
  std::vector<float> mean, std;  // image folders: per-channel normalization (empty: ImageFolderOptions's)
};

enum class Split { kTrain, kTest };

// Throws vdnn::Error naming the folder or file when the data cannot be read.
Dataset load_data(const DataSource& source, const Graph& graph, Split split);

}  // namespace vdnn
