// python/src/bindings.h — what the pieces of the extension vdnn._vdnn share: the Model the
// Python side holds, NumPy conversions, and one bind_* function per file.
//
// Model: a Python `vdnn.Model` is what load_model returned: the source (a model name, JSON or ONNX
// path) and its options, its graph (for the facts it reports) and its initial weights (an ONNX
// file's initializers; empty for JSON models, which start from vdnn's seeded initialisation). A
// Net is built from a fresh graph of the same source (graphs are move-only). NumPy arrays cross
// as float32 C-order copies (torch tensors on the CPU and anything NumPy converts too); every vdnn::Error becomes
// vdnn.Error with vdnn's message.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "comm/communicator.h"
#include "core/graph.h"
#include "interop/network_source.h"
#include "io/model_file.h"
#include "io/safetensors.h"

namespace vdnn::python {

namespace py = pybind11;

struct Model {
  std::string source;
  ModelOptions options;
  NetworkSource loaded;
  Graph fresh_graph() const { return load_network(source, options).graph; }
};

// The data-parallel ranks of this process (ranks.cc): MPI under mpirun, else one rank.
Communicator& process_communicator();

std::shared_ptr<Model> load_model(const std::string& source, const py::object& input, const py::object& classes);
// A Model, or a str naming one (loaded with the model's own input and classes).
std::shared_ptr<Model> as_model(const py::object& model_or_name);

// A float32 array of `shape` holding `data`.
py::array_t<float> to_numpy(const std::vector<float>& data, const std::vector<int64_t>& shape);
// `value` as a NumPy array: a NumPy array as it is, a torch.Tensor on the CPU as its (detached)
// .numpy() view, anything else with __array__, __array_interface__ or the buffer protocol through
// numpy.asarray; a CUDA tensor, or (when `float32`) a tensor of another dtype, is refused naming the
// conversion. `what` names it in errors ("x").
py::array as_array(const py::handle& value, const std::string& what, bool float32);
// `array` (as as_array takes it) as float32 C-order (a copy when it is not already), refusing
// another dtype.
py::array_t<float, py::array::c_style> float32_array(const py::handle& array, const std::string& what);
// JSON text → Python objects (dicts, lists, numbers).
py::object from_json_text(const std::string& text);
// Bytes from an int (bytes) or a str with a unit ("48MiB"); 0 for None. A budget is above 0 and at
// most SIZE_MAX; anything else (0, 2**64, a float) throws vdnn::Error naming `what`.
size_t budget_bytes(const py::object& value, const std::string& what);
// `value` as an int in [lo, hi]; throws vdnn::Error naming `what` and the range for an int outside
// it (however large: compared as Python ints, so 2**64 is "out of range", not a cast error) or a
// value that is not an int (a bool, a float; NumPy's ints are ints, as Python's __index__ says).
// Every integer argument of the API is taken as a py::object and read here: typed int64_t, an
// argument past 64 bits was pybind11's TypeError listing every signature.
int64_t int_in_range(const py::object& value, int64_t lo, int64_t hi, const std::string& what);
// An int the library's own check judges in its words ("iterations -1: expected 0 (whole epochs)
// to ..."): passed on when it fits `bits` (32: an int, 64: an int64_t), refused here naming `what`
// and the library's range lo..hi when it does not (2**70).
int64_t int_for_library_check(const py::object& value, int64_t lo, int64_t hi, const std::string& what,
                              int bits = 64);
// A seed: an int from 0 to 2**64 - 1, read as int_in_range reads one.
uint64_t seed_of(const py::object& value, const std::string& what);

void bind_model(py::module_& m);  // Model, load_model, plan, models
void bind_net(py::module_& m);    // Net
void bind_data(py::module_& m);   // Dataset, load_data, batches, lr_at, train
void bind_ranks(py::module_& m);  // rank, ranks

}  // namespace vdnn::python
