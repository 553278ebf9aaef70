// data/data_source.h — what the CLI's --data flag names: Fashion-MNIST, synthetic data shaped for
// the model, or a folder: CIFAR-10/100's binary batches (data/cifar.h), image folders
// (data/image_folder.h) or Fashion-MNIST-style IDX files.
//
// Model: "fashion-mnist" reads kFashionMnistDefaultDir; "synthetic" makes `synthetic_samples`
// training samples shaped and labelled for the model, and a test split a quarter that size (at
// least 1) over the same classes, both from `seed` (data/synthetic.h), so `vdnn train` and `vdnn
// infer` with the same flags see the same data. Any other text is a folder, told apart by what it
// holds (data_layout), in this order:
//   kCifar           CIFAR's files (is_cifar_folder);
//   kSplitFolders    a train/ subfolder of class folders: training DIR/train, evaluation DIR/val,
//                    else DIR/test;
//   kIdx             Fashion-MNIST's IDX files ({train,t10k}-images-idx3-ubyte, .gz or not);
//   kImageFolderRoot class folders directly (DIR/<class>/<image>), torchvision's ImageFolder(DIR):
//                    one split, the training set; evaluation needs `val_data` (another such root
//                    of the same classes) — without it has_evaluation_split() is false (`vdnn
//                    train` then skips evaluation, saying so), and the test split asked for
//                    explicitly (`vdnn infer`, `vdnn load --split test`) is DIR itself.
// A missing folder is an error saying so (with the named data sets when the text is close to one),
// a folder holding none of these an error listing what each needs. Image folders are decoded at
// the model's input size, with `augment`'s recipe: evaluation resizes by 256/224 before its center
// crop under "imagenet", by 1 otherwise. `val_data` replaces DIR/val of split folders too, and is
// refused for data that carries its own test split (CIFAR, IDX, synthetic).
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
  std::string val_data;          // image folders: the evaluation set's root (DIR/<class>/...); "": the layout's
};

enum class Split { kTrain, kTest };

enum class DataLayout { kFashionMnist, kSynthetic, kCifar, kSplitFolders, kIdx, kImageFolderRoot };

// What `source.data` names, from the folder's listing (nothing is read); throws vdnn::Error naming
// the folder when it does not exist or holds none of the layouts, and naming val_data where it
// does not apply.
DataLayout data_layout(const DataSource& source);

// Whether the data has a split to evaluate on that is not the training data: false only for an
// image-folder root without val_data.
bool has_evaluation_split(const DataSource& source);

// Throws vdnn::Error naming the folder or file when the data cannot be read.
Dataset load_data(const DataSource& source, const Graph& graph, Split split);

}  // namespace vdnn
