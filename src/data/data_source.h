// data/data_source.h — what the CLI's --data flag names: Fashion-MNIST, synthetic data shaped for
// the model, a folder: CIFAR-10/100's binary batches (data/cifar.h), image folders
// (data/image_folder.h) or Fashion-MNIST-style IDX files; or token data for language models: a
// nanoGPT token file (data/token_file.h) or a UTF-8 text read as characters (data/char_text.h).
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
// Token data (the model's per-sample input is [T]: T is the window; `augment` must be none):
//   kTokenFolder     nanoGPT's data/<name>/ folder: train.bin and val.bin and no test.bin (that is
//                    CIFAR-100), training train.bin, evaluation val.bin;
//   kTokenFile       a file named *.bin (or any file with format "tokens"): nanoGPT's uint16 ids;
//                    evaluation `val_data`, else val.bin beside a file named train.bin, else none
//                    (has_evaluation_split() false);
//   kText            a file named *.txt (or any file with format "text"): UTF-8 characters, the
//                    last 10% held out for evaluation (val_data refused).
// Token files' ids must be below `vocab` (0: the model's class count, its vocabulary); text's
// vocabulary is its own characters. Files are told by name, not content (a CIFAR-100 train.bin
// would read as tokens and be refused at its first id >= vocab); `format` names the kind of a file
// whose name does not say it. A folder is never a token or text source by `format`.
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
                                 // token files: the evaluation file (FILE.bin)
  int64_t vocab = 0;             // token files: ids must be below it; 0: the model's class count
  std::string format = "auto";   // a file named by `data`: auto (by its name), tokens (nanoGPT .bin) or text
};

enum class Split { kTrain, kTest };

enum class DataLayout {
  kFashionMnist,
  kSynthetic,
  kCifar,
  kSplitFolders,
  kIdx,
  kImageFolderRoot,
  kTokenFolder,
  kTokenFile,
  kText
};

// What `source.data` names, from the folder's listing (nothing is read); throws vdnn::Error naming
// the folder when it does not exist or holds none of the layouts, and naming val_data where it
// does not apply.
DataLayout data_layout(const DataSource& source);

// Whether the data has a split to evaluate on that is not the training data: false only for an
// image-folder root without val_data, and a token file without val_data or a val.bin beside it.
bool has_evaluation_split(const DataSource& source);

// Throws vdnn::Error naming the folder or file when the data cannot be read.
Dataset load_data(const DataSource& source, const Graph& graph, Split split);

}  // namespace vdnn
