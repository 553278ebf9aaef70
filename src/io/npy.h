// io/npy.h — NumPy's .npy format for float32 arrays: `vdnn infer --images` reads test inputs from
// one and `--logits` writes the outputs to one, so other runtimes (ONNX Runtime, PyTorch) can be
// given exactly the same inputs and compared (np.save / np.load on the Python side).
//
// Model: the magic "\x93NUMPY", a version (1.0 with a 2-byte header length; 2.0 and 3.0 with 4),
// a Python-literal header {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...)} padded to a
// multiple of 64 bytes, then the elements in C order. Only little-endian float32 in C order is read
// (anything else is one error naming the file and what it holds); writing uses version 1.0 and is
// atomic (util/atomic_file.h).
//
//   write_npy("logits.npy", {n, classes}, logits);       // np.load gives float32 [n, classes]
//   NpyArray x = read_npy("images.npy");                 // x.shape {N, C, H, W}, x.data
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vdnn {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // the product of shape, C order
};

// Throws vdnn::Error naming `path` when it cannot be written.
void write_npy(const std::string& path, const std::vector<int64_t>& shape, std::span<const float> data);
// Throws vdnn::Error naming `path` and the first problem (not .npy, not float32 little-endian, Fortran
// order, a shape that does not match the data's length).
NpyArray read_npy(const std::string& path);
// The same from the file's bytes; `source` names them in errors.
NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace vdnn
