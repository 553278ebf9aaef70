#include "data/data_source.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "data/cifar.h"
#include "data/fashion_mnist.h"
#include "data/image_folder.h"
#include "data/image_transform.h"
#include "data/synthetic.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// DIR/train for training; DIR/val (else DIR/test) for evaluation.
Dataset load_image_folders(const std::string& dir, const DataSource& source, const Graph& graph, Split split) {
  namespace fs = std::filesystem;
  const Shape& s = graph.input_shape();
  if (s.rank() != 3)
    VDNN_THROW("image folder '" << dir << "': model '" << graph.name() << "' takes inputs of rank " << s.rank()
                                << "; images need a C x H x W input (--input CxHxW)");
  std::error_code ec;
  const char* sub = split == Split::kTrain ? "train" : fs::is_directory(fs::path(dir) / "val", ec) ? "val" : "test";
  if (split == Split::kTest) {
    if (!fs::is_directory(fs::path(dir) / sub, ec))
      VDNN_THROW("image folder '" << dir << "': no val/ or test/ folder to evaluate on (add one beside train/, or "
                                  << "pass --no-eval)");
  }
  // Labels are positions in the sorted class list: evaluation must list the same classes.
  if (split == Split::kTest) {
    const std::vector<std::string> train = image_folder_classes((fs::path(dir) / "train").string());
    const std::vector<std::string> test = image_folder_classes((fs::path(dir) / sub).string());
    if (train != test) {
      std::vector<std::string> missing, extra;
      std::set_difference(train.begin(), train.end(), test.begin(), test.end(), std::back_inserter(missing));
      std::set_difference(test.begin(), test.end(), train.begin(), train.end(), std::back_inserter(extra));
      VDNN_THROW("image folder '" << dir << "': " << sub << "/ and train/ must hold the same class folders (labels are "
                                  << "their positions by name); " << sub << "/ lacks " << missing.size() << " ("
                                  << (missing.empty() ? "" : missing.front()) << (missing.size() > 1 ? ", ..." : "")
                                  << ") and has " << extra.size() << " more (" << (extra.empty() ? "" : extra.front())
                                  << (extra.size() > 1 ? ", ..." : "") << ")");
    }
  }
  ImageFolderOptions o;
  o.channels = s.channels(), o.height = s.height(), o.width = s.width();
  o.train = split == Split::kTrain;
  o.resize_ratio = source.augment.resized_crop && !o.train ? kImageNetResizeRatio : 1.0;
  o.skip_bad_images = source.skip_bad_images;
  o.mean = source.mean, o.std = source.std;
  const std::string folder = (fs::path(dir) / sub).string();
  return load_image_folder(folder, o, folder);
}

}  // namespace

Dataset load_data(const DataSource& source, const Graph& graph, Split split) {
  if (source.data == "synthetic") {
    const Shape& s = graph.input_shape();
    const int64_t samples =
        split == Split::kTrain ? source.synthetic_samples : std::max<int64_t>(source.synthetic_samples / 4, 1);
    return make_synthetic(samples, s.channels(), s.height(), s.width(), graph.classes(), source.seed,
                          /*split=*/split == Split::kTrain ? 0 : 1);
  }
  const std::string dir = source.data == "fashion-mnist" ? kFashionMnistDefaultDir : source.data;
  if (source.data != "fashion-mnist" && is_cifar_folder(dir)) return load_cifar(dir, /*train=*/split == Split::kTrain);
  std::error_code ec;
  if (source.data != "fashion-mnist" && std::filesystem::is_directory(std::filesystem::path(dir) / "train", ec))
    return load_image_folders(dir, source, graph, split);
  return load_fashion_mnist(dir, /*train=*/split == Split::kTrain);
}

}  // namespace vdnn
