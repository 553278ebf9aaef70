// data/image_folder.cc — scanning (and caching) an image folder, and reading one sample of it.
#include "data/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "data/image_decode.h"
#include "data/image_transform.h"
#include "util/atomic_file.h"
#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {
namespace fs = std::filesystem;
namespace {

// 2: with the files' sizes and colour modes; 3: links to folders no longer followed; 4: CBOR, not JSON
// text (a file or class name that is not UTF-8 is kept byte for byte; JSON text cannot hold it);
// 5: a file under two classes (a link) is listed once, as bad under the second.
// 6: such a file is bad under every class that holds it.
constexpr int kCacheFormat = 7;  // 7: each readable file's modification time
constexpr int64_t kRacySeconds = 2;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// Modification times in the file clock's nanoseconds (-1: unreadable).
int64_t modified(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  return ec ? -1
            : static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

int64_t modified_now() {
  return static_cast<int64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(fs::file_time_type::clock::now().time_since_epoch())
          .count());
}

// The cache file of `root` in `dir`: a name from a hash (FNV-1a) of the absolute path.
std::string cache_file(const std::string& dir, const std::string& root) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : root) h = (h ^ c) * 1099511628211ULL;
  char name[40];
  std::snprintf(name, sizeof name, "file-list-%016llx.cbor", static_cast<unsigned long long>(h));
  return (fs::path(dir) / name).string();
}

// The file a path names (links followed): two paths of one file have one FileId.
using FileId = std::pair<dev_t, ino_t>;
std::optional<FileId> file_id(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // read_image_header says why
  return FileId{st.st_dev, st.st_ino};
}

// What the scan found under one class folder.
struct ClassWalk {
  std::vector<fs::path> images;   // files named as images, in torchvision's order
  std::vector<fs::path> folders;  // the folders listed (the class folder first), for the cache's validity
  std::vector<std::pair<fs::path, std::string>> not_followed;  // links to folders, and why
};

const char* const kFolderLink =
    "is a link to a folder, which the scan does not follow (it could count images twice, under another class, or "
    "from outside the dataset; links to image files are followed)";

// The class folder `dir`, walked without following a link to a folder, so the walk stays inside
// the tree and ends: real folders form a tree, and a folder met twice (a bind mount of an
// ancestor) is not walked again. Links to files are listed like files.
ClassWalk walk_class(const fs::path& dir) {
  ClassWalk w;
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) {
    w.folders.push_back(dir);
    w.not_followed.emplace_back(dir, kFolderLink);
    return w;
  }
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<fs::path> pending{dir};
  while (!pending.empty()) {
    const fs::path folder = pending.back();
    pending.pop_back();
    struct stat st {};
    if (::stat(folder.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) {
      w.not_followed.emplace_back(folder, "is a folder the scan has already listed (a bind mount?); not listed again");
      continue;
    }
    w.folders.push_back(folder);
    for (fs::directory_iterator it(folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code kind;  // a dangling link is a file here: its read names it
      const bool link = it->is_symlink(kind), is_folder = it->is_directory(kind);
      if (link && is_folder)
        w.not_followed.emplace_back(it->path(), kFolderLink);
      else if (is_folder)
        pending.push_back(it->path());
      else if (is_image_name(it->path()))
        w.images.push_back(it->path());
    }
    if (ec) VDNN_THROW("image folder '" << folder.string() << "': cannot be listed (" << ec.message() << ")");
  }
  // torchvision's order: folder by folder (os.walk's roots sorted), each folder's files sorted.
  std::sort(w.images.begin(), w.images.end(), [](const fs::path& a, const fs::path& b) {
    return std::make_pair(a.parent_path().string(), a.filename().string()) <
           std::make_pair(b.parent_path().string(), b.filename().string());
  });
  std::sort(w.not_followed.begin(), w.not_followed.end());
  return w;
}

}  // namespace

std::string default_file_list_cache() {
  if (const char* v = std::getenv("VDNN_CACHE_DIR"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return (fs::path(v) / "vdnn").string();
  if (const char* v = std::getenv("HOME"); v && *v) return (fs::path(v) / ".cache" / "vdnn").string();
  return "";
}

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::vector<std::string> classes;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    std::error_code kind;  // a dangling link is no class, and no reason to stop listing
    if (e.is_directory(kind)) classes.push_back(e.path().filename().string());
  }
  if (ec) VDNN_THROW("image folder '" << root << "': cannot be listed (" << ec.message() << ")");
  std::sort(classes.begin(), classes.end());
  return classes;
}

ImageFolder::ImageFolder(const std::string& root, const ImageFolderOptions& options)
    : root_(fs::absolute(root).lexically_normal().string()), options_(options) {
  if (options_.channels != 1 && options_.channels != 3)
    VDNN_THROW("image folder '" << root << "': the model takes " << options_.channels
                                << " channels; images give 1 (grey) or 3 (RGB)");
  if (options_.mean.empty())
    options_.mean =
        options_.channels == 3 ? std::vector<float>(kImageNetMean, kImageNetMean + 3) : std::vector<float>{0.5f};
  if (options_.std.empty())
    options_.std =
        options_.channels == 3 ? std::vector<float>(kImageNetStd, kImageNetStd + 3) : std::vector<float>{0.5f};
  if (static_cast<int64_t>(options_.mean.size()) != options_.channels ||
      static_cast<int64_t>(options_.std.size()) != options_.channels)
    VDNN_THROW("image folder '" << root << "': " << options_.mean.size() << " means and " << options_.std.size()
                                << " stds (--mean, --std) for a model of " << options_.channels
                                << " channels; expected one of each per channel");
  for (size_t c = 0; c < options_.std.size(); ++c)
    if (!std::isfinite(options_.mean[c]) || !std::isfinite(options_.std[c]) || options_.std[c] <= 0)
      VDNN_THROW("image folder '" << root << "': channel " << c << " has mean " << options_.mean[c] << " and std "
                                  << options_.std[c] << " (--mean, --std); expected finite values, std > 0");
  if (const std::string why = not_a_folder(root_); !why.empty()) VDNN_THROW("image folder '" << root << "' " << why);
  const std::string cache_dir = options_.cache_dir.empty() ? default_file_list_cache() : options_.cache_dir;
  const std::string cache = cache_dir.empty() || cache_dir == "-" ? "" : cache_file(cache_dir, root_);
  if (cache.empty() || !read_cache(cache)) {
    scan();
    if (!cache.empty()) write_cache(cache);
  }
  // What the scan found bad (now, or when the list was cached): refused, or left out with a warning.
  for (const auto& [path, why] : bad_) {
    if (!options_.skip_bad_images) VDNN_THROW(why << " (--skip-bad-images leaves such files out)");
    std::fprintf(stderr, "warning: %s; left out (--skip-bad-images)\n", why.c_str());
  }
  if (files_.empty())
    VDNN_THROW("image folder '" << root << "': no readable JPEG or PNG image in " << classes_.size()
                                << " class folder(s) (expected " << root << "/<class>/<image>.jpg or .png)");
  // Classes with an image, not class folders: --skip-bad-images may have left a folder empty.
  std::vector<int32_t> with_images(labels_);
  std::sort(with_images.begin(), with_images.end());
  with_images.erase(std::unique(with_images.begin(), with_images.end()), with_images.end());
  if (with_images.size() < 2)
    VDNN_THROW("image folder '" << root << "': only class '" << classes_.at(with_images.front())
                                << "' has a readable image (" << classes_.size()
                                << " class folder(s)); a classifier needs at least two classes with images (with "
                                   "one, the loss is 0 and the accuracy 1 for any weights)");
  class_files_.assign(classes_.size(), 0);
  class_undecodable_.assign(classes_.size(), 0);
  for (int32_t label : labels_) ++class_files_[static_cast<size_t>(label)];
}

// Their headers read, some images fail only when decoded (a truncated JPEG). Each is replaced by
// the next image, of whatever class: a class whose every image fails would be trained on no
// sample of its own, and with fewer than two classes left, on one class (loss 0, accuracy 1).
void ImageFolder::count_undecodable(int64_t index) const {
  const auto label = static_cast<size_t>(labels_[static_cast<size_t>(index)]);
  if (++class_undecodable_[label] < class_files_[label]) return;
  std::vector<std::string> left;
  for (size_t c = 0; c < classes_.size(); ++c)
    if (class_undecodable_[c] < class_files_[c]) left.push_back(classes_[c]);
  if (left.size() >= 2) return;
  VDNN_THROW("image folder '" << root_ << "': every image of class '" << classes_[label] << "' ("
                              << class_files_[label] << " file(s)) failed to decode, leaving "
                              << (left.empty() ? std::string("no class") : "only class '" + left.front() + "'")
                              << " with images that decode; a classifier needs at least two (--skip-bad-images "
                                 "replaces bad images by others, of other classes)");
}

void ImageFolder::scan() {
  scan_start_ = modified_now();
  folders_.emplace_back(root_, modified(root_));  // before listing: a change during the scan shows
  classes_ = image_folder_classes(root_);
  if (classes_.empty())
    VDNN_THROW("image folder '" << root_ << "': no class folders (expected " << root_
                                << "/<class>/<image>.jpg or .png)");
  // Each image file under one label: a link (or a hard link) in one class folder to an image of
  // another would give that image two labels. Which is right cannot be known (the link may be the
  // mistake, or the file), so the file is left out under every class that holds it, each named.
  std::vector<ClassWalk> walks;
  std::vector<std::vector<std::optional<FileId>>> ids;   // per class, per image: stat once
  std::map<FileId, std::map<size_t, fs::path>> holders;  // file -> its class and path there
  for (size_t label = 0; label < classes_.size(); ++label) {
    walks.push_back(walk_class(fs::path(root_) / classes_[label]));
    ids.emplace_back();
    for (const fs::path& path : walks.back().images) {
      ids.back().push_back(file_id(path));
      if (ids.back().back()) holders[*ids.back().back()].try_emplace(label, path);
    }
  }
  for (size_t label = 0; label < classes_.size(); ++label) {
    const ClassWalk& walk = walks[label];
    for (const fs::path& folder : walk.folders) folders_.emplace_back(folder.string(), modified(folder));
    for (const auto& [path, why] : walk.not_followed)
      bad_.emplace_back(path.string(), VDNN_MSG("image folder '" << root_ << "': '" << path.string() << "' " << why));
    int64_t readable = 0;
    for (size_t i = 0; i < walk.images.size(); ++i) {
      const fs::path& path = walk.images[i];
      if (const std::optional<FileId>& id = ids[label][i]; id && holders.at(*id).size() > 1) {
        const std::map<size_t, fs::path>& same = holders.at(*id);
        const auto& [other_label, other_path] =
            *std::find_if(same.begin(), same.end(), [&](const auto& h) { return h.first != label; });
        bad_.emplace_back(path.string(),
                          VDNN_MSG("image folder '" << root_ << "': '" << path.string() << "' of class '"
                                                    << classes_[label] << "' is the same file as '"
                                                    << other_path.string() << "' of class '" << classes_[other_label]
                                                    << "' (a link?); an image has one label, so neither class may "
                                                    << "hold it"));
        continue;
      }
      try {
        const ImageHeader h = read_image_header(path.string());
        ++headers_[{h.size.width, h.size.height, h.mode}];
        file_times_.push_back(modified(path));
      } catch (const Error& e) {
        bad_.emplace_back(path.string(), e.what());
        continue;
      }
      files_.push_back(path.string());
      labels_.push_back(static_cast<int32_t>(label));
      ++readable;
    }
    if (readable == 0)
      bad_.emplace_back(walk.folders.front().string(),
                        VDNN_MSG("image folder '" << root_ << "': class folder '" << classes_[label]
                                                  << "' holds no readable JPEG or PNG image"));
  }
}

void ImageFolder::forget_list() {
  folders_.clear(), classes_.clear(), files_.clear(), file_times_.clear(), labels_.clear(), bad_.clear();
  headers_.clear();
}

bool ImageFolder::read_cache(const std::string& file) {
  // Only a regular file: a FIFO at the cache's path would block the read until some writer came.
  if (!not_a_regular_file(file).empty()) return false;
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  try {
    const nlohmann::json j = nlohmann::json::from_cbor(in);
    if (j.at("format").get<int>() != kCacheFormat || j.at("root").get<std::string>() != root_) return false;
    for (const auto& f : j.at("folders"))
      if (modified(f.at(0).get<std::string>()) != f.at(1).get<int64_t>()) return false;  // changed since
    // An image rewritten in place (another size or colour mode) keeps its folder's time: the
    // headers the list holds (adaptation()) would be stale, so every file's time is compared too.
    const auto files = j.at("files").get<std::vector<std::string>>();
    const auto times = j.at("file_times").get<std::vector<int64_t>>();
    if (files.size() != times.size()) return false;
    for (size_t i = 0; i < files.size(); ++i)
      if (modified(files[i]) != times[i]) return false;
    folders_ = j.at("folders").get<decltype(folders_)>();
    classes_ = j.at("classes").get<decltype(classes_)>();
    files_ = files;
    file_times_ = times;
    labels_ = j.at("labels").get<decltype(labels_)>();
    bad_ = j.at("bad").get<decltype(bad_)>();
    headers_ = j.at("headers").get<decltype(headers_)>();
  } catch (const std::exception&) {  // unreadable or from another version: scan again
    forget_list();
    return false;
  }
  // A damaged cache (a label that names no class folder) is scanned again, never trusted.
  const auto no_class = [&](int32_t label) { return label < 0 || static_cast<size_t>(label) >= classes_.size(); };
  bool repaired = files_.size() != labels_.size() || std::any_of(labels_.begin(), labels_.end(), no_class);
  // A bad file repaired in place leaves its folder's time as it was: read the bad ones again.
  for (const auto& [path, why] : bad_) {
    std::error_code ec;
    if (repaired || !fs::is_regular_file(path, ec)) continue;
    try {
      read_image_size(path);
      repaired = true;
    } catch (const Error&) {
    }
  }
  if (repaired) {
    forget_list();
    return false;
  }
  from_cache_ = true;
  return true;
}

// Best effort: a cache that cannot be written (a read-only home, a file name that is not UTF-8)
// only costs the next run a scan. Not written when a folder changed within 2 s of the scan: a
// change in the same tick of the file system's clock would leave its time as the cache saw it
// (git's "racily clean" rule).
void ImageFolder::write_cache(const std::string& file) const {
  const int64_t racy = scan_start_ - kRacySeconds * 1000000000LL;
  for (const auto& [folder, time] : folders_)
    if (time > racy) return;
  for (int64_t time : file_times_)
    if (time > racy) return;
  const nlohmann::json j = {{"format", kCacheFormat}, {"root", root_},   {"folders", folders_},
                            {"classes", classes_},    {"files", files_}, {"file_times", file_times_},
                            {"labels", labels_},      {"bad", bad_},     {"headers", headers_}};
  std::error_code ec;
  if (fs::exists(file, ec) && !not_a_regular_file(file).empty()) {  // a FIFO or a device: not ours to write
    std::fprintf(stderr, "warning: the file list of '%s' is not cached: %s %s\n", root_.c_str(), file.c_str(),
                 not_a_regular_file(file).c_str());
    return;
  }
  try {
    fs::create_directories(fs::path(file).parent_path(), ec);
    const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(j);
    AtomicFile out(file);
    out.write(bytes.data(), bytes.size());
    out.commit();
  } catch (const std::exception& e) {  // vdnn::Error: a read-only folder, a FIFO nobody reads, ...
    std::fprintf(stderr, "warning: the file list of '%s' is not cached: %s\n", root_.c_str(), e.what());
  }
}

int64_t ImageFolder::read(int64_t index, float* dst, int32_t* labels, const Augmentation& augment, Rng& rng) const {
  const int64_t count = static_cast<int64_t>(files_.size());
  for (int64_t tries = 0; tries < count; ++tries) {
    const int64_t i = (index + tries) % count;
    try {
      read_one(i, dst, augment, rng);
      labels[0] = labels_[static_cast<size_t>(i)];
      return i;
    } catch (const Error& e) {
      if (!options_.skip_bad_images) VDNN_THROW(e.what() << " (--skip-bad-images replaces such files)");
      std::lock_guard<std::mutex> lock(bad_mu_);
      if (bad_read_.insert(i).second) {
        std::fprintf(stderr, "warning: %s; replaced by the next image (--skip-bad-images)\n", e.what());
        count_undecodable(i);
      }
    }
  }
  VDNN_THROW("image folder '" << root_ << "': no image could be decoded");
}

ImageAdaptation ImageFolder::adaptation() const {
  ImageAdaptation a;
  const std::string model_mode = options_.channels == 1 ? "L" : "RGB";
  for (const auto& [header, count] : headers_) {
    const auto& [width, height, mode] = header;
    a.images += count;
    if (width != options_.width || height != options_.height) a.resized += count;
    if (mode == model_mode) continue;
    a.converted += count;
    if (std::find(a.converted_from.begin(), a.converted_from.end(), mode) == a.converted_from.end())
      a.converted_from.push_back(mode);
  }
  return a;
}

int64_t ImageFolder::bad_images() const {
  std::lock_guard<std::mutex> lock(bad_mu_);
  return static_cast<int64_t>(bad_.size() + bad_read_.size());
}

void ImageFolder::read_one(int64_t index, float* dst, const Augmentation& augment, Rng& rng) const {
  const int64_t w = options_.width, h = options_.height, c = options_.channels;
  const bool draw = options_.train && augment.resized_crop;
  const DecodedImage img = decode_image(
      files_[static_cast<size_t>(index)], static_cast<int>(c),
      [&](ImageSize size) {
        return draw ? random_resized_crop_region(size, rng) : center_region(size, w, h, options_.resize_ratio);
      },
      w, h);
  const bool flip = options_.train && augment.flip && rng.below(2) == 1;
  if (!options_.train || augment.pad == 0) {
    resample_region(img, w, h, flip, options_.mean.data(), options_.std.data(), dst, /*within_region=*/draw);
    return;
  }
  std::vector<float> sample(static_cast<size_t>(c * h * w)), black(static_cast<size_t>(c));
  resample_region(img, w, h, flip, options_.mean.data(), options_.std.data(), sample.data(), draw);
  for (int64_t ch = 0; ch < c; ++ch) black[static_cast<size_t>(ch)] = -options_.mean[ch] / options_.std[ch];
  augment_sample(sample.data(), dst, c, h, w, black, {augment.pad, false}, rng);
}

Dataset load_image_folder(const std::string& root, const ImageFolderOptions& options, const std::string& name) {
  auto folder = std::make_shared<ImageFolder>(root, options);
  Dataset d;
  d.count = static_cast<int64_t>(folder->labels().size());
  d.channels = options.channels, d.height = options.height, d.width = options.width;
  d.classes = static_cast<int>(folder->classes().size());
  d.class_names = folder->classes();
  d.labels = folder->labels();
  d.name = name;
  d.adapted = folder->adaptation();
  for (int64_t ch = 0; ch < d.channels; ++ch)
    d.zero_pixel.push_back(-folder->options().mean[static_cast<size_t>(ch)] /
                           folder->options().std[static_cast<size_t>(ch)]);
  d.reader = std::move(folder);
  return d;
}

std::string adaptation_line(const std::vector<const Dataset*>& sets) {
  ImageAdaptation all;
  const Dataset* first = nullptr;
  for (const Dataset* d : sets) {
    if (!d || d->adapted.images == 0) continue;
    first = first ? first : d;
    all.images += d->adapted.images, all.resized += d->adapted.resized, all.converted += d->adapted.converted;
    for (const std::string& mode : d->adapted.converted_from)
      if (std::find(all.converted_from.begin(), all.converted_from.end(), mode) == all.converted_from.end())
        all.converted_from.push_back(mode);
  }
  if (!first || (all.resized == 0 && all.converted == 0)) return "";
  std::string line = "images: ";
  if (all.resized > 0)
    line += std::to_string(all.resized) + " of " + std::to_string(all.images) + " resized to " +
            std::to_string(first->width) + "x" + std::to_string(first->height);
  if (all.converted > 0) {
    std::string from;
    for (const std::string& mode : all.converted_from) from += (from.empty() ? "" : ", ") + mode;
    line += std::string(all.resized > 0 ? ", " : "") + std::to_string(all.converted) + " of " +
            std::to_string(all.images) + " converted to " + (first->channels == 1 ? "L (grey)" : "RGB") + " from " +
            from;
  }
  return line + " (the model's input; docs/guide.md, \"Image folders\")";
}

}  // namespace vdnn
