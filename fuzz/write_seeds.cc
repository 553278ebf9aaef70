// fuzz/write_seeds.cc — writes the binary seeds of fuzz/corpus/ (IDX, CIFAR and safetensors files), so the
// committed seeds can be remade: `build-fuzz/fuzz/fuzz_write_seeds fuzz/corpus`. The safetensors
// seeds come from vdnn's own writer; the IDX seeds are plain and gzip-compressed (zlib's gzwrite,
// as the Fashion-MNIST files are), one of them two gzip members long. Text seeds (models/*.json,
// profiles/*) are copies of shipped files.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tests/data/image_files.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes idx_bytes(const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  size_t elements = 1;
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
    elements *= d;
  }
  for (size_t i = 0; i < elements; ++i) b.push_back(static_cast<uint8_t>(i * 37));
  return b;
}

void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// One gzip member per part, appended to `path`.
void write_gzip(const std::string& path, const std::vector<Bytes>& parts) {
  std::remove(path.c_str());
  for (const Bytes& part : parts) {
    gzFile f = gzopen(path.c_str(), "ab");
    gzwrite(f, part.data(), static_cast<unsigned>(part.size()));
    gzclose(f);
  }
}

// A safetensors file as PyTorch's writer makes it (vdnn's writes only F32 and I64): the header
// text, its length first, then the data.
Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "fuzz/corpus";
  const Bytes images = idx_bytes({3, 4, 4}), labels = idx_bytes({5});
  write_plain(dir + "/idx_file/images-3x4x4", images);
  write_plain(dir + "/idx_file/labels-5", labels);
  write_gzip(dir + "/idx_file/images-3x4x4.gz", {images});
  write_gzip(dir + "/idx_file/labels-5-two-members.gz",
             {Bytes(labels.begin(), labels.begin() + 6), Bytes(labels.begin() + 6, labels.end())});

  // One CIFAR-10 record (label 3) and one CIFAR-100 record (coarse 4, fine 42), pixels i * 7 mod 256.
  Bytes pixels;
  for (int i = 0; i < 3072; ++i) pixels.push_back(static_cast<uint8_t>(i * 7 % 256));
  Bytes cifar10{3}, cifar100{4, 42};
  cifar10.insert(cifar10.end(), pixels.begin(), pixels.end());
  cifar100.insert(cifar100.end(), pixels.begin(), pixels.end());
  write_plain(dir + "/cifar/cifar10-one-record.bin", cifar10);
  write_plain(dir + "/cifar/cifar100-one-record.bin", cifar100);

  // Images (fuzz_image): colour and grey, baseline JPEG and PNG.
  std::filesystem::create_directories(dir + "/image");
  vdnn::test::write_jpeg(dir + "/image/rgb.jpg", 24, 18, 3, vdnn::test::gradient(24, 18, 3), 80);
  vdnn::test::write_jpeg(dir + "/image/grey.jpg", 17, 9, 1, vdnn::test::gradient(17, 9, 1), 50);
  vdnn::test::write_png(dir + "/image/rgb.png", 12, 10, 3, vdnn::test::gradient(12, 10, 3));
  vdnn::test::write_png(dir + "/image/grey.png", 9, 7, 1, vdnn::test::gradient(9, 7, 1));

  vdnn::SafeTensors checkpoint;
  checkpoint.metadata = {{"model", "tiny"}, {"step", "7"}};
  checkpoint.tensors.push_back({"conv1.weight", {2, 1, 2, 2}, {1, -2, 0.5f, 3, 0, -0.25f, 8, 1e-3f}});
  checkpoint.tensors.push_back({"conv1.bias", {2}, {0.125f, -1}});
  checkpoint.tensors.push_back({"bn.running_mean", {}, {2.5f}});
  checkpoint.tensors.push_back({"empty", {0, 3}, {}});
  vdnn::write_safetensors(dir + "/safetensors/checkpoint.safetensors", checkpoint);
  vdnn::SafeTensors one;
  one.tensors.push_back({"fc.weight", {3}, {1, 2, 3}});
  vdnn::write_safetensors(dir + "/safetensors/one-tensor.safetensors", one);
  // Every dtype a PyTorch state_dict brings: F16 [1, -2, 65504, 2^-24], BF16 [1, -0.5], F64 [0.1],
  // I64 num_batches_tracked 7, U8 [255].
  write_plain(dir + "/safetensors/pytorch-dtypes.safetensors",
              safetensors_bytes(R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
                                R"("d":{"dtype":"F64","shape":[1],"data_offsets":[12,20]},)"
                                R"("n.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[20,28]},)"
                                R"("n.u8":{"dtype":"U8","shape":[1],"data_offsets":[28,29]}})",
                                {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00,  // F16
                                 0x80, 0x3f, 0x00, 0xbf,                          // BF16
                                 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,  // F64 0.1
                                 7,    0,    0,    0,    0,    0,    0,    0,     // I64
                                 0xff}));                                         // U8
  return 0;
}
