// python/src/model.cc — vdnn.Model, vdnn.load_model, vdnn.models and vdnn.plan (the figures of
// `vdnn plan --json`, from the same planning/plan_report.h).
#include <pybind11/stl.h>

#include <sstream>

#include "bindings.h"
#include "plan/planner.h"
#include "planning/device_planner.h"
#include "plan/policy.h"
#include "planning/device_table.h"
#include "planning/plan_report.h"
#include "planning/plan_source.h"
#include "planning/state_placement.h"
#include "runtime/net_settings.h"
#include "util/json_dump.h"
#include "vdnn/error.h"

namespace vdnn::python {
namespace {

// input: None, "3x32x32", or a sequence of ints (C, H, W) or (features,).
std::optional<Shape> input_shape(const py::object& input) {
  if (input.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(input)) return parse_shape(input.cast<std::string>(), "input");
  std::vector<int64_t> dims;
  try {
    dims = input.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    VDNN_THROW("input: expected a shape such as (3, 32, 32) or \"3x32x32\"");
  }
  std::ostringstream text;
  for (size_t i = 0; i < dims.size(); ++i) text << (i ? "x" : "") << dims[i];
  return parse_shape(text.str(), "input");  // the CLI's --input rules
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.dims.size());
  for (size_t i = 0; i < s.dims.size(); ++i) t[i] = s.dims[i];
  return t;
}

py::dict plan(const py::object& model_or_name, const py::object& batch_arg, const std::string& device,
              const py::object& device_memory, const std::string& policy, const std::string& sync,
              const std::string& prefetch, const std::string& link, const std::string& costs,
              const py::object& repeats,
              const py::object& host_memory, bool slice_search, const std::string& optimizer,
              const std::string& precision, const std::string& optimizer_state) {
  const std::shared_ptr<Model> model = as_model(model_or_name);
  const OptionNames keywords{OptionNames::kKeywords};  // errors name the keyword arguments
  const int64_t batch = int_in_range(batch_arg, 1, kMaxBatch, "batch");
  const SyncMode sync_mode = parse_sync_mode(sync, "sync");
  const Prefetch prefetch_rule = parse_prefetch(prefetch, "prefetch");
  const OptimizerKind optimizer_kind = parse_optimizer(optimizer, "optimizer");
  const bool choose_state = optimizer_state == "auto";
  StatePlace state_place = choose_state ? StatePlace::kDevice : parse_state_place(optimizer_state, "optimizer_state");
  PlanSourceOptions source{.device = device,
                           .link = link,
                           .costs_file = costs,
                           .repeats = static_cast<int>(int_for_library_check(repeats, 1, kMaxRepeats, "repeats", 32)),
                           .names = keywords};
  source.precision = parse_precision(precision, "precision");
  source.calibrate_with = [model] { return model->fresh_graph(); };
  const bool budget_given = !device_memory.is_none();
  const size_t given = budget_bytes(device_memory, "device_memory");
  const size_t host_given = budget_bytes(host_memory, "host_memory");
  std::string json;
  {
    py::gil_scoped_release release;
    const Graph graph = model->fresh_graph();
    PlannerRequest request{.device_memory = budget_given ? std::optional<size_t>(given) : std::nullopt,
                           .host_memory = host_given,
                           .optimizer = optimizer_kind,
                           .sync = sync_mode};
    PlanInputs inputs = plan_inputs(graph, batch, source);  // this CPU's costs: measured once
    std::optional<StatePlacement> chosen;
    if (choose_state) {
      chosen = choose_state_placement(graph, inputs, request, policy, prefetch_rule, keywords);
      state_place = chosen->place;
    }
    request.optimizer_state = state_place;
    const DevicePlanner planned(graph, std::move(inputs), request, keywords);
    const PlanInputs& in = planned.in;
    const Planner& planner = planned.planner;
    const size_t budget = planned.budget;
    const size_t host_budget = planner.host_budget();  // a unified-memory board: what is left
    const PlanTable table = plan_table(planner, budget, policy, prefetch_rule);
    nlohmann::json out = plan_json(table, {.model = graph.name(),
                                           .batch = batch,
                                           .sync = sync,
                                           .prefetch = prefetch,
                                           .device = in.device,
                                           .optimizer = optimizer,
                                           .optimizer_state = to_string(state_place)});
    if (chosen) out["optimizer_state_choice"] = chosen->summary;
    // In fp32 only, as the CLI (no backend runs slice runs in bf16 yet).
    const std::optional<SliceRunChoice> slices =
        slice_search && source.precision == Precision::kFp32 && state_place == StatePlace::kDevice
            ? plan_slice_runs(graph, batch, policy, source, budget, sync_mode, host_budget, optimizer_kind)
                     : std::nullopt;
    if (slices) out["slice_runs"] = slice_runs_json(*slices, table.oracle);  // as `vdnn plan --policy auto`
    json = dump_json(out);
  }
  return from_json_text(json);
}

// `vdnn plan --device A,B,... --json` (planning/device_table.h): one training plan per device.
py::dict plan_devices(const py::object& model_or_name, const std::vector<std::string>& devices,
                      const py::object& batch_arg,
                      const py::object& device_memory, const std::string& policy, const std::string& sync,
                      const std::string& prefetch, const py::object& host_memory, const std::string& optimizer,
                      const std::string& precision, const std::string& optimizer_state) {
  const std::shared_ptr<Model> model = as_model(model_or_name);
  const OptionNames keywords{OptionNames::kKeywords};
  const int64_t batch = int_in_range(batch_arg, 1, kMaxBatch, "batch");
  if (optimizer_state == "auto")
    VDNN_THROW("optimizer_state 'auto' plans one device both ways (vdnn.plan); plan_devices takes 'device' or 'host'");
  DeviceTableRequest request{.devices = devices,
                             .devices_option = "devices",
                             .host_memory = budget_bytes(host_memory, "host_memory"),
                             .sync = parse_sync_mode(sync, "sync"),
                             .prefetch = parse_prefetch(prefetch, "prefetch"),
                             .optimizer = parse_optimizer(optimizer, "optimizer"),
                             .optimizer_state = parse_state_place(optimizer_state, "optimizer_state"),
                             .source = {.precision = parse_precision(precision, "precision"), .names = keywords}};
  if (!device_memory.is_none()) request.budget = budget_bytes(device_memory, "device_memory");
  if (!policy.empty()) request.policies = {policy};  // plan_table refuses a policy it does not know
  std::string json;
  {
    py::gil_scoped_release release;
    const Graph graph = model->fresh_graph();
    const std::vector<DevicePlan> rows = plan_devices(graph, batch, request);
    json = dump_json(device_table_json(
        rows, {.model = graph.name(), .optimizer = request.optimizer, .batch = batch, .budget = request.budget.value_or(0)}));
  }
  return from_json_text(json);
}

}  // namespace

std::shared_ptr<Model> load_model(const std::string& source, const py::object& input, const py::object& classes) {
  ModelOptions options;
  options.input = input_shape(input);
  if (!classes.is_none()) {
    options.classes = static_cast<int>(int_in_range(classes, kMinClasses, kMaxClasses, "classes"));
  }
  py::gil_scoped_release release;
  return std::make_shared<Model>(Model{source, options, load_network(source, options)});
}

std::shared_ptr<Model> as_model(const py::object& model_or_name) {
  if (py::isinstance<Model>(model_or_name)) return model_or_name.cast<std::shared_ptr<Model>>();
  if (py::isinstance<py::str>(model_or_name))
    return load_model(model_or_name.cast<std::string>(), py::none(), py::none());
  VDNN_THROW("model: expected a vdnn.Model (vdnn.load_model) or a model name or path (str), got a "
             << py::str(py::type::of(model_or_name).attr("__name__")).cast<std::string>());
}

void bind_model(py::module_& m) {
  py::class_<Model, std::shared_ptr<Model>>(m, "Model", "A network: what vdnn.load_model read.")
      .def_property_readonly("name", [](const Model& x) { return x.loaded.graph.name(); })
      .def_property_readonly("source", [](const Model& x) { return x.source; })
      .def_property_readonly(
          "input", [](const Model& x) { return shape_tuple(x.loaded.graph.input_shape()); },
          "the sample shape, (C, H, W) or (features,)")
      .def_property_readonly("classes", [](const Model& x) { return x.loaded.graph.classes(); })
      .def_property_readonly(
          "parameter_count", [](const Model& x) { return x.loaded.graph.parameter_count(); }, "trainable parameters")
      .def_property_readonly("layers",
                             [](const Model& x) {
                               std::vector<std::string> names;
                               for (const Node& n : x.loaded.graph.nodes()) names.push_back(n.layer->name());
                               return names;
                             })
      .def_property_readonly(
          "initial_weights",
          [](const Model& x) {
            py::dict d;
            for (const SafeTensor& t : x.loaded.initial_weights.tensors) d[py::str(t.name)] = to_numpy(t.data, t.shape);
            return d;
          },
          "an ONNX file's initializers by name (empty for JSON models: vdnn initialises them from the seed)")
      .def("__repr__", [](const Model& x) {
        return "vdnn.Model('" + x.loaded.graph.name() + "', input " + shape_text(x.loaded.graph.input_shape().dims) +
               ", " + std::to_string(x.loaded.graph.classes()) + " classes)";
      });
  m.def("load_model", &load_model, py::arg("name_or_path"), py::arg("input") = py::none(),
        py::arg("classes") = py::none(),
        "A shipped model's name (vdnn.models()), a vdnn JSON file or an ONNX file; input and classes "
        "override the model's, as --input and --classes do.");
  m.def("models", &model_names, "The shipped models' names.");
  m.def("plan", &plan, py::arg("model"), py::arg("batch") = 128, py::arg("device") = "cpu",
        py::arg("device_memory") = py::none(), py::arg("policy") = "", py::arg("sync") = "event",
        py::arg("prefetch") = "vdnn", py::arg("link") = "", py::arg("costs") = "", py::arg("repeats") = 3,
        py::arg("host_memory") = py::none(), py::arg("slice_search") = true, py::arg("optimizer") = "sgd",
        py::arg("precision") = "fp32", py::arg("optimizer_state") = "device",
        "`vdnn plan --json` as a dict: every configuration's memory and predicted step time (policy: '' "
        "for all of them, or none, conv, all, dyn, auto). device: 'cpu' (measured now, or costs= a "
        "`vdnn profile --save` file) or a device profile such as 'titan-x-maxwell'. host_memory: "
        "`--host-memory` (a row whose host copies need more has fits False, host_fits False). With "
        "policy 'auto' on a device profile, 'slice_runs' holds the slice-run search's choice, as in the CLI "
        "(20-60 auto searches; slice_search=False skips it, as --no-slice-search). optimizer: 'sgd' or 'adamw', "
        "whose state (one or two buffers per trainable parameter) every configuration keeps (`--optimizer`). "
        "precision: 'fp32' or 'bf16' (`--precision`: this CPU's bf16 kernels, or a GPU profile's tensor cores). "
        "optimizer_state: 'device', 'host' or 'auto' (`--optimizer-state`: auto plans both and keeps the faster, "
        "naming why in 'optimizer_state_choice'; a device profile needs host_memory_bytes_per_second; no slice "
        "search in host memory).");
  m.def("plan_devices", &plan_devices, py::arg("model"), py::arg("devices"), py::arg("batch") = 128,
        py::arg("device_memory") = py::none(), py::arg("policy") = "", py::arg("sync") = "event",
        py::arg("prefetch") = "vdnn", py::arg("host_memory") = py::none(), py::arg("optimizer") = "sgd",
        py::arg("precision") = "fp32", py::arg("optimizer_state") = "device",
        "`vdnn plan --device A,B,... --json` as a dict: one training plan per device profile in `devices` "
        "(each at its own memory unless device_memory is given for all), each policy's predicted step there "
        "(policy: '' for none, conv, all, dyn and auto, or one of them) and the fastest that fits. Slice runs are "
        "not searched; 'cpu' is refused (plan it alone with vdnn.plan).");
}

}  // namespace vdnn::python
