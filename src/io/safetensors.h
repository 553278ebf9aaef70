// io/safetensors.h — the safetensors file format (Hugging Face), read and written by vdnn itself.
//
// Model: 8 bytes of little-endian header length N, then N bytes of JSON mapping each tensor's name
// to {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets into the data that
// follows the header) plus an optional "__metadata__" object of string -> string, then the data.
// Reading converts to float: F32 as it is, F16 and BF16 exactly (every such value is a float),
// F64 rounded to the nearest float (ties to even; a finite value beyond float's range is an
// error, not an Inf). Integer tensors (I8, I16, I32, I64, U8, U16, U32, U64) are read as int64
// into `integers` only where the caller accepts them (SafeTensorsReadOptions::accept_integer,
// e.g. PyTorch's "<bn>.num_batches_tracked"); any other integer tensor, and BOOL and the F8
// dtypes, are an error naming the file, the tensor and the dtype. vdnn writes F32, and I64 for
// integer tensors. Writing pads the header with spaces to a multiple of 8 bytes and is atomic
// (util/atomic_file.h). Reading checks everything (truncation, header length, JSON,
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
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace vdnn {

struct SafeTensor {
  std::string name;
  std::vector<int64_t> shape;     // [] is a scalar
  std::vector<float> data;        // the product of shape elements (floating dtypes, as floats)
  std::string dtype = "F32";      // as the file has it: "F32", "F16", "BF16", "F64", "I64", ...
  std::vector<int64_t> integers;  // integer dtypes instead of `data` (written as I64)
  bool is_integer() const;
};

struct SafeTensorsReadOptions {
  // Which integer tensors the caller takes (by name); null or false: refused with an error.
  std::function<bool(const std::string& name)> accept_integer;
};

struct SafeTensors {
  std::string path;  // where it was read from (names the file in errors); empty if built in memory
  std::map<std::string, std::string> metadata;
  std::vector<SafeTensor> tensors;  // in data order

  const SafeTensor* find(const std::string& name) const;
  // The floating-point tensor `name` with exactly `shape`; throws vdnn::Error naming the file, the
  // tensor and both shapes otherwise (or the dtype, for an integer tensor). `what` says who
  // needs it ("the model").
  const SafeTensor& require(const std::string& name, const std::vector<int64_t>& shape,
                            const std::string& what = "the model") const;
};

// "[32, 1, 3, 3]"
std::string shape_text(const std::vector<int64_t>& shape);

// Throws vdnn::Error naming `path` when it cannot be written; the old file is then untouched.
void write_safetensors(const std::string& path, const SafeTensors& file);
// Throws vdnn::Error naming `path` and the first problem found.
SafeTensors read_safetensors(const std::string& path, const SafeTensorsReadOptions& options = {});
// The same from the file's bytes in memory (read_safetensors maps the file and calls this);
// `source` names them in errors and becomes the result's `path`.
SafeTensors parse_safetensors(std::span<const uint8_t> bytes, const std::string& source,
                              const SafeTensorsReadOptions& options = {});

}  // namespace vdnn
