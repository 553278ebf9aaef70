// data/image_folder.h — a folder of JPEG and PNG images, one subfolder per class, as torchvision's
// ImageFolder reads it; samples decoded on demand (data/image_decode.h) in the loader's workers.
//
// Model: `root/<class>/**/<file>.{jpg,jpeg,png}` (extensions in any case; other files are ignored,
// as torchvision does). Classes are the subfolders sorted by name (label = position), at least two; files are in
// torchvision's order (folders sorted by path, each folder's files by name). Links: a link to a file is followed (a
// folder of links to images kept elsewhere is a dataset too), a link to a folder never is — as a class folder or
// inside one — since it can only lead out of the tree or back into it (`ln -s .. cat/up` would label every dog a cat,
// `ln -s . cat/loop` count each image again at every depth); a folder met twice (a bind mount) is listed once. Only
// regular files are opened (a FIFO named x.png would block the scan forever). The scan reads every file's header, so
// a file that is not an image, an empty or unreadable file, a FIFO or device, a link to a folder, or an empty class
// folder is found before training: an error naming it, or with skip_bad_images a warning on stderr, the file left out
// (bad_images() counts it) and an empty class kept with no samples. The scanned list is cached in `cache_dir` (one JSON
// file per root), valid while every folder it walked and every image it lists has the same modification time (adding or
// removing a file changes its folder's; rewriting an image in place, its own) and its bad files are still bad; a later
// run reads it instead of scanning (one stat per image, where the scan opens each). A folder or image changed within
// 2 s of the scan keeps the list from being cached (its next change could fall in the same tick of the file system's
// clock). A sample: the region ImageFolderOptions's recipe picks (training with resized_crop: torchvision's
// RandomResizedCrop; else Resize(round(side * resize_ratio)) + CenterCrop), resampled to height x width, mirrored with
// probability 1/2 when augment.flip, normalized with mean and std per channel, then padded and cropped when augment.pad
// > 0 (data/augment.h). Grey files feed 3-channel models repeated, colour files feed 1-channel models as luma. A file
// that fails to decode later (a truncated JPEG) throws naming it, or with skip_bad_images is warned about once,
// counted, and replaced by the next readable sample (read returns which one, for its label).
//
//   ImageFolderOptions o{.channels = 3, .height = 224, .width = 224};
//   Dataset train = load_image_folder("/data/imagenet/train", o, "imagenet-train");
//   // train.reader decodes; train.labels, train.classes, train.count as for any Dataset
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "data/dataset.h"

namespace vdnn {

struct ImageFolderOptions {
  int64_t channels = 3, height = 224, width = 224;
  bool train = true;             // draws regions (with Augmentation::resized_crop); else the center
  double resize_ratio = 1;       // evaluation's Resize: the shorter side to round(side * this)
  std::vector<float> mean, std;  // per channel; empty: ImageNet's (3 channels) or 0.5 (grey)
  bool skip_bad_images = false;
  std::string cache_dir;  // where scanned lists are kept; "" = default_file_list_cache(), "-": none
};

// $VDNN_CACHE_DIR, else $XDG_CACHE_HOME/vdnn, else $HOME/.cache/vdnn ("" when none is set).
std::string default_file_list_cache();

// The class folders of `root` (its subfolders, sorted by name). Throws vdnn::Error naming `root`
// when it cannot be listed.
std::vector<std::string> image_folder_classes(const std::string& root);

class ImageFolder : public SampleReader {
 public:
  ImageFolder(const std::string& root, const ImageFolderOptions& options);

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<int32_t>& labels() const { return labels_; }
  const std::string& path(int64_t index) const { return files_[static_cast<size_t>(index)]; }
  bool list_from_cache() const { return from_cache_; }
  // Of the readable files, those not stored at the model's size or in its colour mode (from the
  // scan's headers): what every sample's recipe resizes and converts.
  ImageAdaptation adaptation() const;
  const ImageFolderOptions& options() const { return options_; }

  // Writes the sample and its label (labels[0]); returns which sample (see SampleReader).
  int64_t read(int64_t index, float* dst, int32_t* labels, const Augmentation& augment, Rng& rng) const override;
  int64_t bad_images() const override;

 private:
  void scan();
  bool read_cache(const std::string& file);
  void forget_list();  // what a cache that is not used left behind
  void write_cache(const std::string& file) const;
  void keep_or_refuse_bad(const std::string& path, const std::string& why);
  void read_one(int64_t index, float* dst, const Augmentation& augment, Rng& rng) const;

  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;  // full paths
  std::vector<int64_t> file_times_;  // their modification times at the scan (cache validity)
  std::vector<int32_t> labels_;
  std::vector<std::pair<std::string, int64_t>> folders_;  // walked, with their mtimes (cache validity)
  std::vector<std::pair<std::string, std::string>> bad_;  // found by the scan: path, why
  // The readable files' headers: (width, height, colour mode) -> files.
  std::map<std::tuple<int64_t, int64_t, std::string>, int64_t> headers_;
  int64_t scan_start_ = 0;  // the file clock when scan() began (ns)
  bool from_cache_ = false;
  mutable std::mutex bad_mu_;
  mutable std::set<int64_t> bad_read_;  // samples that failed to decode (skip_bad_images)
  // Per class: its readable files, and those of them that failed to decode (skip_bad_images): a
  // class whose every image fails is left with none, and fewer than two such classes is refused.
  std::vector<int64_t> class_files_;
  mutable std::vector<int64_t> class_undecodable_;
  void count_undecodable(int64_t index) const;  // under bad_mu_
};

// An ImageFolder as a Dataset (its reader, its adaptation), named `name`.
Dataset load_image_folder(const std::string& root, const ImageFolderOptions& options, const std::string& name);

// One line, once per run, for the image files of `sets` that are not the model's input as stored:
// "images: 1500 of 1550 resized to 28x28, 40 converted to L (grey) from RGB, RGBA"; "" when none is.
std::string adaptation_line(const std::vector<const Dataset*>& sets);

}  // namespace vdnn
