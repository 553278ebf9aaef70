#include "data/data_source.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "data/char_text.h"
#include "data/cifar.h"
#include "data/fashion_mnist.h"
#include "data/image_folder.h"
#include "data/image_transform.h"
#include "data/synthetic.h"
#include "data/token_file.h"
#include "util/did_you_mean.h"
#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

namespace fs = std::filesystem;

bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool has_idx_files(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"})
    for (const char* ext : {"", ".gz"})
      if (fs::exists(dir / (std::string(name) + ext), ec)) return true;
  return false;
}

bool is_regular_file_at(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// nanoGPT's data/<name>/: train.bin and val.bin (CIFAR-100's folder holds train.bin and test.bin).
bool is_token_folder(const fs::path& dir) {
  std::error_code ec;
  return is_regular_file_at(dir / "train.bin") && is_regular_file_at(dir / "val.bin") &&
         !fs::exists(dir / "test.bin", ec);
}

bool has_subfolders(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code kind;
    if (e.is_directory(kind)) return true;
  }
  return false;
}

// The training and evaluation folders of image-folder data.
fs::path train_folder(const DataSource& source, DataLayout layout) {
  return layout == DataLayout::kSplitFolders ? fs::path(source.data) / "train" : fs::path(source.data);
}

fs::path eval_folder(const DataSource& source, DataLayout layout) {
  if (!source.val_data.empty()) return source.val_data;
  if (layout == DataLayout::kImageFolderRoot) return source.data;  // asked for explicitly: the root itself
  const fs::path dir = source.data;
  if (is_folder(dir / "val")) return dir / "val";
  if (!is_folder(dir / "test"))
    VDNN_THROW("image folder '" << dir.string() << "': no val/ or test/ folder to evaluate on (add one beside train/, "
                                << "give --val-data DIR, or pass --no-eval)");
  return dir / "test";
}

// Labels are positions in the sorted class list: evaluation must list the same classes.
void check_same_classes(const DataSource& source, DataLayout layout, const fs::path& train, const fs::path& eval) {
  const std::vector<std::string> a = image_folder_classes(train.string());
  const std::vector<std::string> b = image_folder_classes(eval.string());
  if (a == b) return;
  std::vector<std::string> missing, extra;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(missing));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(extra));
  const std::string eval_name =
      source.val_data.empty() ? eval.filename().string() + "/" : "--val-data '" + source.val_data + "'";
  const std::string train_name = layout == DataLayout::kSplitFolders ? "train/" : "the training folder";
  VDNN_THROW("image folder '" << source.data << "': " << eval_name << " and " << train_name
                              << " must hold the same class folders (labels are their positions by name); " << eval_name
                              << " lacks " << missing.size() << " (" << (missing.empty() ? "" : missing.front())
                              << (missing.size() > 1 ? ", ..." : "") << ") and has " << extra.size() << " more ("
                              << (extra.empty() ? "" : extra.front()) << (extra.size() > 1 ? ", ..." : "") << ")");
}

Dataset load_image_folders(const DataSource& source, DataLayout layout, const Graph& graph, Split split) {
  const Shape& s = graph.input_shape();
  if (s.rank() != 3)
    VDNN_THROW("image folder '" << source.data << "': model '" << graph.name() << "' takes inputs of rank " << s.rank()
                                << "; images need a C x H x W input (--input CxHxW)");
  const fs::path train = train_folder(source, layout);
  const fs::path folder = split == Split::kTrain ? train : eval_folder(source, layout);
  if (const std::string why = not_a_folder(folder.string()); split == Split::kTest && !why.empty())
    VDNN_THROW("--val-data '" << folder.string() << "' " << why << " (expected an image folder, <class>/<image>)");
  if (split == Split::kTest && folder != train) check_same_classes(source, layout, train, folder);
  ImageFolderOptions o;
  o.channels = s.channels(), o.height = s.height(), o.width = s.width();
  o.train = split == Split::kTrain;
  o.resize_ratio = source.augment.resized_crop && !o.train ? kImageNetResizeRatio : 1.0;
  o.skip_bad_images = source.skip_bad_images;
  o.mean = source.mean, o.std = source.std;
  return load_image_folder(folder.string(), o, folder.string());
}

// The token file a split reads ("" when a token file has no evaluation file).
std::string token_file(const DataSource& source, DataLayout layout, Split split) {
  const fs::path data = source.data;
  if (split == Split::kTrain) return (layout == DataLayout::kTokenFolder ? data / "train.bin" : data).string();
  if (!source.val_data.empty()) return source.val_data;
  if (layout == DataLayout::kTokenFolder) return (data / "val.bin").string();
  const fs::path beside = data.parent_path() / "val.bin";
  return data.filename() == "train.bin" && is_regular_file_at(beside) ? beside.string() : "";
}

// T: the model's per-sample input is [T] token ids (Graph::token_input).
int64_t token_window(const DataSource& source, const Graph& graph) {
  const Shape& s = graph.input_shape();
  if (s.rank() != 1 || !graph.token_input())
    VDNN_THROW("token data '" << source.data << "': model '" << graph.name() << "' takes per-sample inputs of shape "
                              << s.to_string() << (graph.token_input() ? "" : " (values, not tokens)")
                              << "; token data needs a model whose input is T token ids (\"input\": [T], "
                                 "\"input_type\": \"tokens\")");
  return s.channels();
}

Dataset load_token_data(const DataSource& source, DataLayout layout, const Graph& graph, Split split) {
  if (source.augment.any())
    VDNN_THROW("token data '" << source.data << "': --augment is for images; token windows take none (--augment none)");
  const int64_t window = token_window(source, graph);
  const bool train = split == Split::kTrain;
  if (layout == DataLayout::kText)
    return load_char_text(source.data, {.window = window, .train = train},
                          fs::path(source.data).filename().string() + (train ? "-train" : "-val"));
  const std::string file = token_file(source, layout, split);
  if (file.empty())
    VDNN_THROW("token file '" << source.data << "': nothing to evaluate on (a file named train.bin evaluates on "
                              << "val.bin beside it; give --val-data FILE.bin, or pass --no-eval)");
  const int64_t vocab = source.vocab > 0 ? source.vocab : graph.classes();
  return load_token_file(file, {.window = window, .vocab = vocab, .train = train}, file);
}

}  // namespace

DataLayout data_layout(const DataSource& source) {
  const std::string& data = source.data;
  const std::string& format = source.format;
  if (format != "auto" && format != "tokens" && format != "text")
    VDNN_THROW("--data-format '" << format
                                 << "': expected auto (by the file's name), tokens (nanoGPT's .bin token ids) or "
                                    "text (UTF-8 characters)");
  const bool folders = data != "fashion-mnist" && data != "synthetic";
  if (!folders && format != "auto")
    VDNN_THROW("--data-format " << format << " is for a file named by --data; " << data << " is a data set");
  if (!folders && !source.val_data.empty())
    VDNN_THROW("--val-data is for image folders; " << data << " carries its own test split");
  if (data == "synthetic") return DataLayout::kSynthetic;
  if (data == "fashion-mnist") return DataLayout::kFashionMnist;
  std::error_code ec;
  if (!fs::exists(data, ec)) {
    const std::string hint = did_you_mean(data, {"fashion-mnist", "synthetic"});
    const std::string why = ec ? " " + not_a_folder(data) : std::string(": no such folder");  // a link loop says so
    VDNN_THROW("data '" << data << "'" << why << " (" << (hint.empty() ? "" : hint + " ")
                        << "expected fashion-mnist, synthetic, a folder of CIFAR batches, image folders or "
                        << "Fashion-MNIST IDX files, or a token file FILE.bin or text FILE.txt)");
  }
  const bool file_named = format != "auto" || data.ends_with(".bin") || data.ends_with(".txt");
  if (file_named && !is_folder(data)) {
    if (const std::string why = not_a_regular_file(data); !why.empty())  // a FIFO, a device: say which
      VDNN_THROW("data file '" << data << "' " << why << " (token ids or text are read from a regular file)");
    const bool text = format == "text" || (format == "auto" && data.ends_with(".txt"));
    if (text && !source.val_data.empty())
      VDNN_THROW("--val-data is for image folders and token files; the text '"
                 << data << "' carries its own evaluation split (its last 10%)");
    return text ? DataLayout::kText : DataLayout::kTokenFile;
  }
  if (format != "auto")
    VDNN_THROW(
        "--data-format " << format << " reads one file; '" << data
                         << "' is a folder (a folder of nanoGPT's train.bin and val.bin needs no --data-format)");
  if (const std::string why = not_a_folder(data); !why.empty())  // a file, a FIFO, /dev/zero: say which
    VDNN_THROW("data folder '" << data << "' " << why
                               << " (--data names a folder, a data set, a token file FILE.bin or a text FILE.txt; "
                               << "--data-format tokens|text reads a file of another name)");
  if (is_token_folder(data)) return DataLayout::kTokenFolder;
  DataLayout layout = DataLayout::kImageFolderRoot;
  if (is_cifar_folder(data))
    layout = DataLayout::kCifar;
  else if (is_folder(fs::path(data) / "train"))
    layout = DataLayout::kSplitFolders;
  else if (has_idx_files(data))
    layout = DataLayout::kIdx;
  else if (!has_subfolders(data))
    VDNN_THROW("data folder '" << data << "' holds no data vdnn reads: expected CIFAR-10/100 binary batches, "
                               << "class folders of images (DIR/<class>/*.jpg|png, as torchvision's ImageFolder), "
                               << "DIR/train/<class>/... with DIR/val/<class>/..., or the Fashion-MNIST IDX files");
  if (!source.val_data.empty() && (layout == DataLayout::kCifar || layout == DataLayout::kIdx))
    VDNN_THROW("--val-data is for image folders; the " << (layout == DataLayout::kCifar ? "CIFAR" : "IDX")
                                                       << " folder '" << data << "' carries its own test split");
  if (const std::string why = source.val_data.empty() ? "" : not_a_folder(source.val_data); !why.empty())
    VDNN_THROW("--val-data '" << source.val_data << "' " << why << " (expected an image folder, <class>/<image>)");
  return layout;
}

bool has_evaluation_split(const DataSource& source) {
  const DataLayout layout = data_layout(source);
  if (layout == DataLayout::kTokenFile) return !token_file(source, layout, Split::kTest).empty();
  return layout != DataLayout::kImageFolderRoot || !source.val_data.empty();
}

Dataset load_data(const DataSource& source, const Graph& graph, Split split) {
  const DataLayout layout = data_layout(source);
  switch (layout) {
    case DataLayout::kSynthetic: {
      const Shape& s = graph.input_shape();
      const int64_t samples =
          split == Split::kTrain ? source.synthetic_samples : std::max<int64_t>(source.synthetic_samples / 4, 1);
      if (graph.token_input())
        return make_synthetic_tokens(samples, s.channels(), graph.classes(), source.seed,
                                     /*split=*/split == Split::kTrain ? 0 : 1);
      return make_synthetic(samples, s.channels(), s.height(), s.width(), graph.classes(), source.seed,
                            /*split=*/split == Split::kTrain ? 0 : 1);
    }
    case DataLayout::kFashionMnist:
      return load_fashion_mnist(kFashionMnistDefaultDir, /*train=*/split == Split::kTrain);
    case DataLayout::kCifar:
      return load_cifar(source.data, /*train=*/split == Split::kTrain);
    case DataLayout::kIdx:
      return load_fashion_mnist(source.data, /*train=*/split == Split::kTrain);
    case DataLayout::kSplitFolders:
    case DataLayout::kImageFolderRoot:
      return load_image_folders(source, layout, graph, split);
    case DataLayout::kTokenFolder:
    case DataLayout::kTokenFile:
    case DataLayout::kText:
      return load_token_data(source, layout, graph, split);
  }
  VDNN_THROW("data '" << source.data << "': unknown layout");
}

}  // namespace vdnn
