// python/src/module.cc — the extension vdnn._vdnn: vdnn.Error, the shared conversions, the bindings.
#include <algorithm>
#include <limits>
#include <optional>

#include "bindings.h"
#include "util/host_memory.h"
#include "util/size_parse.h"
#include "vdnn/data_dir.h"
#include "vdnn/error.h"
#include "vdnn/version.h"

namespace vdnn::python {

py::array_t<float> to_numpy(const std::vector<float>& data, const std::vector<int64_t>& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<float> out(dims);
  if (!data.empty()) std::copy(data.begin(), data.end(), out.mutable_data());
  return out;
}

namespace {

std::string type_name_of(const py::handle& h) { return py::str(py::type::of(h).attr("__name__")).cast<std::string>(); }

// A torch.Tensor when torch is loaded (never imported here: a process without torch pays nothing).
bool is_torch_tensor(const py::handle& value) {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains("torch")) return false;
  const py::object torch = modules["torch"];
  return py::hasattr(torch, "Tensor") && py::isinstance(value, torch.attr("Tensor"));
}

// A CPU tensor's values as NumPy (detached: vdnn reads them, no autograd graph is involved), its
// dtype checked first when `float32` so the message names PyTorch's conversion.
py::array from_torch(const py::handle& tensor, const std::string& what, bool float32) {
  const std::string device = py::str(tensor.attr("device")).cast<std::string>();
  if (py::str(tensor.attr("device").attr("type")).cast<std::string>() != "cpu")
    VDNN_THROW(what << ": a torch.Tensor on " << device << "; vdnn reads host memory: pass " << what
                    << ".cpu() (or .detach().cpu().numpy())");
  const std::string dtype = py::str(tensor.attr("dtype")).cast<std::string>();
  if (float32 && dtype != "torch.float32")
    VDNN_THROW(what << ": dtype " << dtype << ", expected torch.float32 (convert with .float())");
  return py::reinterpret_borrow<py::array>(tensor.attr("detach")().attr("numpy")());
}

}  // namespace

py::array as_array(const py::handle& value, const std::string& what, bool float32) {
  if (py::isinstance<py::array>(value)) return py::reinterpret_borrow<py::array>(value);
  if (is_torch_tensor(value)) return from_torch(value, what, float32);
  if (py::hasattr(value, "__array__") || py::hasattr(value, "__array_interface__") || PyObject_CheckBuffer(value.ptr()))
    return py::reinterpret_borrow<py::array>(py::module_::import("numpy").attr("asarray")(value));
  VDNN_THROW(what << ": expected an array (a NumPy array, a torch.Tensor on the CPU, or anything with __array__ or "
                  << "the buffer protocol), got a " << type_name_of(value)
                  << (float32 ? " (convert with numpy.asarray(..., dtype=numpy.float32))" : ""));
}

py::array_t<float, py::array::c_style> float32_array(const py::handle& array, const std::string& what) {
  const py::array a = as_array(array, what, /*float32=*/true);
  if (!a.dtype().is(py::dtype::of<float>()))
    VDNN_THROW(what << ": dtype " << py::str(a.dtype()).cast<std::string>()
                    << ", expected float32 (convert with .astype(numpy.float32))");
  return py::array_t<float, py::array::c_style>::ensure(a);
}

py::object from_json_text(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

namespace {

// `value` as a Python int: an int, or what __index__ makes one of (NumPy's integers); none for a
// bool (Python's or NumPy's: True is not a count) or anything else.
std::optional<py::int_> as_int(const py::object& value) {
  if (py::isinstance<py::bool_>(value) ||
      (py::hasattr(value, "dtype") && py::str(value.attr("dtype").attr("kind")).cast<std::string>() == "b"))
    return std::nullopt;
  PyObject* index = PyNumber_Index(value.ptr());
  if (!index) {
    PyErr_Clear();
    return std::nullopt;
  }
  return py::reinterpret_steal<py::int_>(index);
}

// as_int, or an error naming `what` and the range it should be in.
template <class Int>
py::int_ python_int(const py::object& value, Int lo, Int hi, const std::string& what) {
  if (std::optional<py::int_> i = as_int(value)) return *i;
  VDNN_THROW(what << ": expected an int from " << lo << " to " << hi << ", got "
                  << py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

}  // namespace

size_t budget_bytes(const py::object& value, const std::string& what) {
  if (value.is_none()) return 0;
  if (py::isinstance<py::str>(value)) return check_budget(parse_size(value.cast<std::string>(), what), what);
  if (const std::optional<py::int_> bytes = as_int(value)) {
    // Python's ints have no bound: compared as Python ints, never cast first (2**64 would not fit).
    const py::int_& n = *bytes;
    if (n > py::int_(std::numeric_limits<size_t>::max()))
      VDNN_THROW(what << " " << py::repr(n).cast<std::string>() << ": expected a size of at most "
                      << std::numeric_limits<size_t>::max() << " bytes, or a text such as \"48MiB\"");
    if (n < py::int_(1))
      VDNN_THROW(
          what << " " << py::repr(n).cast<std::string>()
               << ": expected a size above 0 in bytes, or a text such as \"48MiB\" (leave it out for the default)");
    return n.cast<size_t>();
  }
  VDNN_THROW(what << ": expected bytes (int) or a size such as \"48MiB\" (str), got "
                  << py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

namespace {

// Throws naming `what` and lo..hi when `i` is outside [from, to] (compared as Python ints: 2**64
// is out of range, not a cast error).
template <class Int>
void refuse_outside(const py::int_& i, Int from, Int to, Int lo, Int hi, const std::string& what) {
  if (i < py::int_(from) || i > py::int_(to))
    VDNN_THROW(what << " " << py::repr(i).cast<std::string>() << ": expected " << lo << " to " << hi);
}

}  // namespace

int64_t int_in_range(const py::object& value, int64_t lo, int64_t hi, const std::string& what) {
  const py::int_ i = python_int(value, lo, hi, what);
  refuse_outside(i, lo, hi, lo, hi, what);
  return i.cast<int64_t>();
}

int64_t int_for_library_check(const py::object& value, int64_t lo, int64_t hi, const std::string& what, int bits) {
  const py::int_ i = python_int(value, lo, hi, what);
  const int64_t top = bits == 32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  refuse_outside(i, -top - 1, top, lo, hi, what);
  return i.cast<int64_t>();
}

uint64_t seed_of(const py::object& value, const std::string& what) {
  constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();
  const py::int_ i = python_int(value, uint64_t{0}, kTop, what);
  refuse_outside(i, uint64_t{0}, kTop, uint64_t{0}, kTop, what);
  return i.cast<uint64_t>();
}

}  // namespace vdnn::python

PYBIND11_MODULE(_vdnn, m) {
  namespace py = pybind11;
  m.doc() = "vdnn: train networks larger than device memory (the C++ runtime's Python API)";
  py::register_exception<vdnn::Error>(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {  // the CLI's words, not "std::bad_alloc"
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, vdnn::out_of_host_memory_message().c_str());
    }
  });
  m.attr("__version__") = vdnn::version();  // CMakeLists.txt's project version, as `vdnn --version`
  m.def("set_data_dir", &vdnn::set_data_dir, py::arg("path"),
        "Where shipped models/ and profiles/ are found (include/vdnn/data_dir.h); '' restores the lookup.");
#ifdef VDNN_PYTHON_SOURCE_DATA_DIR
  m.attr("_source_data_dir") = VDNN_PYTHON_SOURCE_DATA_DIR;
#endif
  vdnn::python::bind_model(m);
  vdnn::python::bind_net(m);
  vdnn::python::bind_data(m);
  vdnn::python::bind_ranks(m);
}
