// python/src/module.cc — the extension vdnn._vdnn: vdnn.Error, the shared conversions, the bindings.
#include <algorithm>

#include "bindings.h"
#include "util/host_memory.h"
#include "util/size_parse.h"
#include "vdnn/data_dir.h"
#include "vdnn/error.h"

namespace vdnn::python {

py::array_t<float> to_numpy(const std::vector<float>& data, const std::vector<int64_t>& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<float> out(dims);
  if (!data.empty()) std::copy(data.begin(), data.end(), out.mutable_data());
  return out;
}

py::array_t<float, py::array::c_style> float32_array(const py::handle& array, const std::string& what) {
  if (!py::isinstance<py::array>(array))
    VDNN_THROW(what << ": expected a NumPy array of float32, got a "
                    << py::str(py::type::of(array).attr("__name__")).cast<std::string>());
  const py::array a = py::reinterpret_borrow<py::array>(array);
  if (!a.dtype().is(py::dtype::of<float>()))
    VDNN_THROW(what << ": dtype " << py::str(a.dtype()).cast<std::string>()
                    << ", expected float32 (convert with .astype(numpy.float32))");
  return py::array_t<float, py::array::c_style>::ensure(a);
}

py::object from_json_text(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

size_t budget_bytes(const py::object& value, const std::string& what) {
  if (value.is_none()) return 0;
  if (py::isinstance<py::str>(value)) return parse_size(value.cast<std::string>(), what);
  if (py::isinstance<py::int_>(value)) {
    const long long v = value.cast<long long>();
    if (v < 0) VDNN_THROW(what << " " << v << ": expected a size >= 0 in bytes, or a text such as \"48MiB\"");
    return static_cast<size_t>(v);
  }
  VDNN_THROW(what << ": expected bytes (int) or a size such as \"48MiB\" (str)");
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
