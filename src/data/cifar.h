// data/cifar.h — CIFAR-10 and CIFAR-100 in their binary versions (Krizhevsky's "cifar-10-batches-bin"
// and "cifar-100-binary"), as `vdnn train --data DIR` reads them.
//
// Model: a file is a run of fixed-size records, one per 32x32 RGB image: CIFAR-10 a label byte
// (0..9) then 3072 pixel bytes; CIFAR-100 a coarse label byte (0..19), a fine label byte (0..99,
// the label used) then 3072 pixel bytes. The pixels are the red plane, then green, then blue, each
// row-major — already NCHW. The files carry no header, so the format is told by the folder: CIFAR-10
// has data_batch_1.bin .. data_batch_5.bin (training) and test_batch.bin; CIFAR-100 has train.bin and
// test.bin. Each pixel becomes (p / 255 - mean[c]) / std[c] with the usual per-channel constants
// (those of torchvision's CIFAR recipes, below). Anything malformed — a size that is not a whole
// number of records, a label out of range, a missing batch — throws vdnn::Error naming the file.
//
//   vdnn::Dataset train = vdnn::load_cifar("/data/cifar-10-batches-bin", /*train=*/true);   // 50000
//   vdnn::Dataset test = vdnn::load_cifar("/data/cifar-100-binary", /*train=*/false);      // 10000
//   bool cifar = vdnn::is_cifar_folder("/data/cifar-10-batches-bin");                       // true
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "data/dataset.h"

namespace vdnn {

enum class CifarKind { kCifar10, kCifar100 };

inline constexpr int64_t kCifarSide = 32;
inline constexpr int64_t kCifarPixels = 3 * kCifarSide * kCifarSide;  // per image
// Per channel (R, G, B), of the training images: CIFAR-10's, and CIFAR-100's.
inline constexpr float kCifar10Mean[3] = {0.4914f, 0.4822f, 0.4465f};
inline constexpr float kCifar10Std[3] = {0.2470f, 0.2435f, 0.2616f};
inline constexpr float kCifar100Mean[3] = {0.5071f, 0.4865f, 0.4409f};
inline constexpr float kCifar100Std[3] = {0.2673f, 0.2564f, 0.2762f};

// Bytes of one record: 1 + 3072 (CIFAR-10) or 2 + 3072 (CIFAR-100).
int64_t cifar_record_bytes(CifarKind kind);

// The records in `bytes` appended to `out` (whose name, classes and shape are set on first use);
// `source` names them in errors.
void append_cifar_records(std::span<const uint8_t> bytes, CifarKind kind, const std::string& source, Dataset& out);

// Whether `dir` holds any of CIFAR-10's or CIFAR-100's binary files (data_batch_1.bin or
// test_batch.bin; train.bin or test.bin).
bool is_cifar_folder(const std::string& dir);

// The training or test split of the CIFAR folder `dir`. Throws vdnn::Error naming the folder and
// the files expected when they are not all there.
Dataset load_cifar(const std::string& dir, bool train);

}  // namespace vdnn
