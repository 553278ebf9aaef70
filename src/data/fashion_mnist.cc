// data/fashion_mnist.cc — Fashion-MNIST from four IDX files, gzip'd (.gz) or not.
#include "data/fashion_mnist.h"

#include <filesystem>
#include <system_error>

#include "data/idx_file.h"
#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// `name`.gz if it is in `dir`, else `name` uncompressed; neither: an error naming both.
std::string find_idx_file(const std::string& dir, const std::string& name) {
  std::error_code ec;
  const std::filesystem::path gz = std::filesystem::path(dir) / (name + ".gz");
  const std::filesystem::path plain = std::filesystem::path(dir) / name;
  if (std::filesystem::exists(gz, ec)) return gz.string();
  if (std::filesystem::exists(plain, ec)) return plain.string();
  VDNN_THROW("data folder '" << dir << "': " << name << ".gz not found, nor " << name
                             << " (expected the four Fashion-MNIST IDX files, gzip'd or not)");
}

}  // namespace

Dataset load_fashion_mnist(const std::string& dir, bool train) {
  if (const std::string why = not_a_folder(dir); !why.empty()) {
    VDNN_THROW("data folder '" << dir << "' " << why << " (expected Fashion-MNIST IDX files, .gz or not, there; "
                               << "install Debian's dataset-fashion-mnist or pass --data DIR)");
  }
  const std::string prefix = train ? "train" : "t10k";
  const std::string image_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");

  const IdxArray images = read_idx(image_path);
  if (images.dims.size() != 3 || images.dims[1] != kFashionMnistSide || images.dims[2] != kFashionMnistSide) {
    std::string shape;
    for (size_t i = 0; i < images.dims.size(); ++i) {
      if (i > 0) shape += 'x';
      shape += std::to_string(images.dims[i]);
    }
    VDNN_THROW(image_path << ": images have shape " << shape << " (expected N x 28 x 28 Fashion-MNIST images)");
  }
  const IdxArray labels = read_idx(label_path);
  if (labels.dims.size() != 1) {
    VDNN_THROW(label_path << ": labels have " << labels.dims.size()
                          << " dimensions (expected a 1-dimensional label vector)");
  }
  const int64_t count = images.dims[0];
  if (labels.dims[0] != count) {
    VDNN_THROW(label_path << ": holds " << labels.dims[0] << " labels but " << image_path << " holds " << count
                          << " images (expected equal counts)");
  }

  Dataset out;
  out.count = count;
  out.channels = 1;
  out.height = kFashionMnistSide;
  out.width = kFashionMnistSide;
  out.classes = kFashionMnistClasses;
  out.name = train ? "fashion-mnist-train" : "fashion-mnist-test";
  out.zero_pixel = {-kFashionMnistMean / kFashionMnistStd};

  out.labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t label = labels.data[static_cast<size_t>(i)];
    if (label >= kFashionMnistClasses) {
      VDNN_THROW(label_path << ": label " << i << " is " << int{label} << " (expected 0..9)");
    }
    out.labels[static_cast<size_t>(i)] = label;
  }

  // Precompute the 256 possible normalized values so the conversion is a table lookup.
  float table[256];
  for (int p = 0; p < 256; ++p) {
    table[p] = (static_cast<float>(p) / 255.0f - kFashionMnistMean) / kFashionMnistStd;
  }
  out.images.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) out.images[i] = table[images.data[i]];
  return out;
}

}  // namespace vdnn
