// io/safetensors.h — the safetensors file format (Hugging Face), read and written by vdnn itself.
//
// Model: 8 bytes of little-endian header length N, then N bytes of JSON mapping each tensor's name
// to {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets into the data that
// follows the header) plus an optional "__metadata__" object of string -> string, then the data.
// vdnn writes and reads F32 only. Writing pads the header with spaces to a multiple of 8 bytes and
// is atomic (util/atomic_file.h). Reading checks everything (truncation, header length, JSON,
// dtype, shapes, offsets inside the data, no overlaps or holes) and reports the first problem as a
// vdnn::Error naming the file; a file written here reads back bit-identically.
//
//   SafeTensors f;
//   f.metadata["step"] = "500";
//   f.tensors.push_back({"conv1.weight", {32, 1, 3, 3}, weights});
//   write_safetensors("run.safetensors", f);
//   SafeTensors g = read_safetensors("run.safetensors");
//   const SafeTensor& w = g.require("conv1.weight", {32, 1, 3, 3});  // Error if missing or reshaped
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace vdnn {

struct SafeTensor {
  std::string name;
  std::vector<int64_t> shape;  // [] is a scalar
  std::vector<float> data;     // the product of shape elements
};

struct SafeTensors {
  std::string path;  // where it was read from (names the file in errors); empty if built in memory
  std::map<std::string, std::string> metadata;
  std::vector<SafeTensor> tensors;  // in data order

  const SafeTensor* find(const std::string& name) const;
  // The tensor `name` with exactly `shape`; throws vdnn::Error naming the file, the tensor and
  // both shapes otherwise. `what` says who needs it ("the model").
  const SafeTensor& require(const std::string& name, const std::vector<int64_t>& shape,
                            const std::string& what = "the model") const;
};

// "[32, 1, 3, 3]"
std::string shape_text(const std::vector<int64_t>& shape);

// Throws vdnn::Error naming `path` when it cannot be written; the old file is then untouched.
void write_safetensors(const std::string& path, const SafeTensors& file);
// Throws vdnn::Error naming `path` and the first problem found.
SafeTensors read_safetensors(const std::string& path);
// The same from the file's bytes in memory (read_safetensors maps the file and calls this);
// `source` names them in errors and becomes the result's `path`.
SafeTensors parse_safetensors(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace vdnn
