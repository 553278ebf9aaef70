// data/cifar.cc — CIFAR-10/100 binary batches into a Dataset (see cifar.h).
#include "data/cifar.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "util/file_kind.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> cifar10_files(bool train) {
  if (!train) return {"test_batch.bin"};
  std::vector<std::string> out;
  for (int i = 1; i <= 5; ++i) out.push_back("data_batch_" + std::to_string(i) + ".bin");
  return out;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool has_cifar10(const fs::path& dir) { return is_file(dir / "data_batch_1.bin") || is_file(dir / "test_batch.bin"); }
bool has_cifar100(const fs::path& dir) { return is_file(dir / "train.bin") || is_file(dir / "test.bin"); }

CifarKind kind_of(const std::string& dir) {
  if (has_cifar10(dir) && has_cifar100(dir))
    VDNN_THROW("data folder '" << dir << "' holds both CIFAR-10 files (data_batch_*.bin, test_batch.bin) and CIFAR-100 "
                               << "files (train.bin, test.bin); expected one dataset per folder");
  return has_cifar10(dir) ? CifarKind::kCifar10 : CifarKind::kCifar100;
}

}  // namespace

int64_t cifar_record_bytes(CifarKind kind) { return (kind == CifarKind::kCifar10 ? 1 : 2) + kCifarPixels; }

void append_cifar_records(std::span<const uint8_t> bytes, CifarKind kind, const std::string& source, Dataset& out) {
  const bool ten = kind == CifarKind::kCifar10;
  const int classes = ten ? 10 : 100;
  const size_t record = static_cast<size_t>(cifar_record_bytes(kind));
  const char* what = ten ? "CIFAR-10 records of 1 label byte and 3072 pixel bytes"
                         : "CIFAR-100 records of 2 label bytes (coarse, fine) and 3072 pixel bytes";
  if (bytes.empty()) VDNN_THROW(source << ": empty file (expected " << what << ")");
  if (bytes.size() % record != 0)
    VDNN_THROW(source << ": " << bytes.size() << " bytes is not a whole number of " << record
                      << "-byte records (expected " << what << "; truncated?)");
  const float* mean = ten ? kCifar10Mean : kCifar100Mean;
  const float* stdev = ten ? kCifar10Std : kCifar100Std;
  if (out.count == 0) {
    out.channels = 3;
    out.height = out.width = kCifarSide;
    out.classes = classes;
    out.zero_pixel.clear();
    for (int c = 0; c < 3; ++c) out.zero_pixel.push_back(-mean[c] / stdev[c]);
  }
  float table[3][256];  // each channel's 256 normalized values
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 256; ++p) table[c][p] = (static_cast<float>(p) / 255.0f - mean[c]) / stdev[c];
  const size_t records = bytes.size() / record;
  const size_t plane = static_cast<size_t>(kCifarSide * kCifarSide);
  out.labels.reserve(out.labels.size() + records);
  out.images.reserve(out.images.size() + records * static_cast<size_t>(kCifarPixels));
  for (size_t r = 0; r < records; ++r) {
    const uint8_t* at = bytes.data() + r * record;
    if (!ten && at[0] >= 20)
      VDNN_THROW(source << ": record " << r << " has coarse label " << int{at[0]} << " (expected 0..19)");
    const uint8_t label = at[ten ? 0 : 1];
    if (label >= classes)
      VDNN_THROW(source << ": record " << r << " has label " << int{label} << " (expected 0.." << classes - 1 << ")");
    out.labels.push_back(label);
    const uint8_t* pixels = at + (ten ? 1 : 2);
    for (size_t c = 0; c < 3; ++c)
      for (size_t i = 0; i < plane; ++i) out.images.push_back(table[c][pixels[c * plane + i]]);
  }
  out.count += static_cast<int64_t>(records);
}

bool is_cifar_folder(const std::string& dir) { return has_cifar10(dir) || has_cifar100(dir); }

Dataset load_cifar(const std::string& dir, bool train) {
  const CifarKind kind = kind_of(dir);
  const std::vector<std::string> files =
      kind == CifarKind::kCifar10 ? cifar10_files(train) : std::vector<std::string>{train ? "train.bin" : "test.bin"};
  Dataset out;
  for (const std::string& name : files) {
    const fs::path path = fs::path(dir) / name;
    if (const std::string why = not_a_regular_file(path.string()); !why.empty())
      VDNN_THROW("data folder '" << dir << "': " << name << " " << why << " (a CIFAR-"
                                 << (kind == CifarKind::kCifar10
                                         ? "10 folder holds data_batch_1.bin .. data_batch_5.bin and test_batch.bin"
                                         : "100 folder holds train.bin and test.bin")
                                 << ", as in the dataset's binary version)");
    const MappedFile file(path.string());
    append_cifar_records(file.bytes(), kind, file.path(), out);
  }
  out.name = std::string(kind == CifarKind::kCifar10 ? "cifar-10-" : "cifar-100-") + (train ? "train" : "test");
  return out;
}

}  // namespace vdnn
