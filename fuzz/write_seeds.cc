// fuzz/write_seeds.cc — writes the binary seeds of fuzz/corpus/ (IDX and safetensors files), so the
// committed seeds can be remade: `build-fuzz/fuzz/fuzz_write_seeds fuzz/corpus`. The safetensors
// seeds come from vdnn's own writer; the IDX seeds are plain and gzip-compressed (zlib's gzwrite,
// as the Fashion-MNIST files are), one of them two gzip members long. Text seeds (models/*.json,
// profiles/*) are copies of shipped files.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors.h"

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

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "fuzz/corpus";
  const Bytes images = idx_bytes({3, 4, 4}), labels = idx_bytes({5});
  write_plain(dir + "/idx_file/images-3x4x4", images);
  write_plain(dir + "/idx_file/labels-5", labels);
  write_gzip(dir + "/idx_file/images-3x4x4.gz", {images});
  write_gzip(dir + "/idx_file/labels-5-two-members.gz",
             {Bytes(labels.begin(), labels.begin() + 6), Bytes(labels.begin() + 6, labels.end())});

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
  return 0;
}
