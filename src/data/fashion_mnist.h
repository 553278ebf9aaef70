// data/fashion_mnist.h — loader for Zalando's Fashion-MNIST (10 classes of 28x28 grey images).
//
// Model: the data folder holds the four IDX files {train,t10k}-images-idx3-ubyte.gz and
// {train,t10k}-labels-idx1-ubyte.gz, or the same names without .gz, uncompressed (a .gz file is
// taken when both exist; Debian package dataset-fashion-mnist installs the .gz ones in
// kFashionMnistDefaultDir). Pixels p in 0..255 become (p/255 - 0.2860) / 0.3530 (the training set's
// mean and std), stored as a 1x28x28 NCHW image. Image and label counts must agree and labels must
// be < 10; any problem throws vdnn::Error naming the file.
//
//   vdnn::Dataset train = vdnn::load_fashion_mnist(vdnn::kFashionMnistDefaultDir, /*train=*/true);
//   vdnn::Dataset test = vdnn::load_fashion_mnist("/my/data", /*train=*/false);
//   // train.count == 60000, test.count == 10000, classes == 10, channels == 1, 28 x 28
#pragma once

#include <string>

#include "data/dataset.h"

namespace vdnn {

inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;
inline constexpr int kFashionMnistClasses = 10;
inline constexpr int64_t kFashionMnistSide = 28;

// Loads the training split (train == true, 60000 samples) or the test split (10000 samples).
Dataset load_fashion_mnist(const std::string& dir, bool train);

}  // namespace vdnn
