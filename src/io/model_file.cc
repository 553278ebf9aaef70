#include "io/model_file.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/layer_registry.h"
#include "io/json_text.h"
#include "util/did_you_mean.h"
#include "util/file_kind.h"
#include "util/json_dump.h"
#include "util/mapped_file.h"
#include "util/text_list.h"
#include "util/utf8.h"
#include "vdnn/data_dir.h"
#include "vdnn/error.h"

namespace vdnn {

namespace fs = std::filesystem;

static Shape read_input_shape(const nlohmann::json& model, const std::string& source) {
  const auto it = model.find("input");
  bool ok = it != model.end() && it->is_array() && (it->size() == 3 || it->size() == 1);
  std::vector<int64_t> dims;
  if (ok)
    for (const auto& d : *it) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxInputDim)
        ok = false;
      else
        dims.push_back(d.get<int64_t>());
    }
  if (!ok)
    VDNN_THROW(source << ": field 'input': expected [C, H, W] or [K] of integers in [1, " << kMaxInputDim << "], got "
                      << (it == model.end() ? "nothing" : dump_json(*it)));
  return Shape(dims);
}

// "input_type": "values" (the default: floats) or "tokens" (int32 token ids, an input [T]).
static InputType read_input_type(const nlohmann::json& model, const std::string& source) {
  const auto it = model.find("input_type");
  if (it == model.end()) return InputType::kFloat;
  if (it->is_string() && *it == "tokens") return InputType::kTokens;
  if (it->is_string() && *it == "values") return InputType::kFloat;
  VDNN_THROW(source << ": field 'input_type': expected \"values\" or \"tokens\", got " << dump_json(*it));
}

static std::vector<std::string> read_inputs(const nlohmann::json& obj, const std::string& where) {
  std::vector<std::string> inputs;
  const auto it = obj.find("inputs");
  if (it == obj.end()) return inputs;
  if (!it->is_array() || it->empty())
    VDNN_THROW(where << ": field 'inputs': expected a non-empty list of value names, got " << dump_json(*it));
  for (const auto& v : *it) {
    if (!v.is_string()) VDNN_THROW(where << ": field 'inputs': names must be strings, got " << dump_json(v));
    inputs.push_back(v.get<std::string>());
  }
  return inputs;
}

// "tied_to": "<layer>": this layer uses that earlier layer's parameters (GPT-2's lm_head reads
// the token embedding's [vocab, C] table), their gradients summed and the tensor stored and
// counted once (Node::param_owner). -1 without the field; the field is removed from `obj`.
static int tied_owner(const Graph& graph, nlohmann::json& obj, const std::string& where) {
  const auto it = obj.find("tied_to");
  if (it == obj.end()) return -1;
  if (!it->is_string())
    VDNN_THROW(where << ": field 'tied_to': expected an earlier layer's name, got " << dump_json(*it));
  const std::string owner = it->get<std::string>();
  obj.erase("tied_to");
  const ValueId v = graph.find_value(owner);
  if (v < 0 || graph.value(v).producer < 0)
    VDNN_THROW(where << ": field 'tied_to': no earlier layer named '" << owner << "'");
  return graph.value(v).producer;
}

Graph parse_model(const nlohmann::json& model, const std::string& source, const ModelOptions& options) {
  if (!model.is_object()) VDNN_THROW(source << ": a model must be a JSON object");
  for (auto it = model.begin(); it != model.end(); ++it)
    if (it.key() != "name" && it.key() != "input" && it.key() != "classes" && it.key() != "layers" &&
        it.key() != "description" && it.key() != "input_type")
      VDNN_THROW(source << ": unknown top-level field '" << it.key()
                        << "' (valid: name, description, input, input_type, classes, layers)");
  const auto name_field = model.find("name");
  if (name_field != model.end() && !name_field->is_string())
    VDNN_THROW(source << ": field 'name': expected a string, got " << dump_json(*name_field));
  // Without a "name", the file's: a path's bytes need not be UTF-8 (JSON text is), util/utf8.h.
  const std::string name = model.value("name", escape_invalid_utf8(fs::path(source).stem().string()));
  Shape input = options.input ? *options.input : read_input_shape(model, source);
  const InputType input_type = read_input_type(model, source);
  int classes = 0;
  if (options.classes) {
    classes = *options.classes;
  } else {
    const auto c = model.find("classes");
    if (c == model.end() || !c->is_number_integer() || c->get<int64_t>() < kMinClasses ||
        c->get<int64_t>() > kMaxClasses)
      VDNN_THROW(source << ": field 'classes': expected an integer in [" << kMinClasses << ", " << kMaxClasses
                        << "] (as --classes), got " << (c == model.end() ? "nothing" : dump_json(*c)));
    classes = c->get<int>();
  }
  const auto layers = model.find("layers");
  if (layers == model.end() || !layers->is_array() || layers->empty())
    VDNN_THROW(source << ": field 'layers': expected a non-empty list of layer objects");

  Graph graph = [&] {
    try {
      return Graph(name, input, classes, input_type);
    } catch (const Error& e) {
      VDNN_THROW(source << ": " << e.what());
    }
  }();
  int index = 0;
  for (nlohmann::json obj : *layers) {
    ++index;
    const std::string at = VDNN_MSG(source << ": layer #" << index);
    if (!obj.is_object()) VDNN_THROW(at << ": expected a JSON object, got " << dump_json(obj));
    if (!obj.contains("name") || !obj["name"].is_string() || obj["name"].get<std::string>().empty())
      VDNN_THROW(at << ": field 'name': expected a non-empty string");
    if (!obj.contains("type") || !obj["type"].is_string())
      VDNN_THROW(at << " ('" << obj["name"].get<std::string>() << "'): field 'type': expected a string");
    const std::string layer_name = obj["name"].get<std::string>();
    const std::string where = VDNN_MSG(source << ": layer '" << layer_name << "'");
    // "classes" as a count: a classifier's units, a language model's vocabulary (its embedding's).
    for (const char* field : {"units", "vocab"})
      if (obj.contains(field) && obj[field] == "classes") obj[field] = classes;
    const int owner = tied_owner(graph, obj, where);  // reads and removes "tied_to"
    LayerConfig cfg(obj, where);
    auto layer = make_layer(layer_name, obj["type"].get<std::string>(), cfg);
    auto inputs = read_inputs(obj, where);
    try {
      graph.add_sliced(std::move(layer), inputs, /*slices=*/1, owner);
    } catch (const Error& e) {
      VDNN_THROW(source << ": " << e.what());
    }
  }
  try {
    graph.finalize();
  } catch (const Error& e) {
    VDNN_THROW(source << ": " << e.what());
  }
  return graph;
}

std::string models_dir() {
  if (const char* env = std::getenv("VDNN_MODELS_DIR")) return env;
  return data_folder("models");
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(models_dir(), ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Graph load_model(const std::string& name_or_path, const ModelOptions& options) {
  fs::path path = name_or_path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    path = fs::path(models_dir()) / (name_or_path + ".json");
    if (name_or_path.find('/') != std::string::npos || !fs::is_regular_file(path, ec)) {
      const std::string why = not_a_regular_file(name_or_path);
      if (why != "does not exist")  // a folder, a FIFO, /dev/zero: say so
        VDNN_THROW("model '" << name_or_path << "' " << why << " (expected a model file or a known model's name)");
      const std::vector<std::string> known = model_names();
      const std::string hint = did_you_mean(name_or_path, known);
      VDNN_THROW("model '" << name_or_path << "' is neither a file nor a known model ("
                           << (hint.empty() ? "" : hint + " ") << "known: " << join_list(known) << "; looked in "
                           << models_dir() << ")");
    }
  }
  const MappedFile file(path.string());
  return parse_model_text(file.text(), path.string(), options);
}

Graph parse_model_text(std::string_view text, const std::string& source, const ModelOptions& options) {
  return parse_model(parse_json_text(text, source), source, options);
}

Shape parse_shape(const std::string& text, const std::string& flag) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    char* stop = nullptr;
    const long long d = std::strtoll(part.c_str(), &stop, 10);
    if (part.empty() || *stop != '\0' || d < 1 || d > kMaxInputDim)
      VDNN_THROW(flag << ": expected CxHxW or K with positive integers (e.g. 3x224x224), got '" << text << "'");
    dims.push_back(d);
    start = end + 1;
  }
  if (dims.size() != 3 && dims.size() != 1)
    VDNN_THROW(flag << ": expected CxHxW or K (e.g. 3x224x224), got '" << text << "'");
  return Shape(dims);
}

ModelBuilder::ModelBuilder(std::string name, std::vector<int64_t> input, int classes) {
  model_ = {{"name", name}, {"input", input}, {"classes", classes}, {"layers", nlohmann::json::array()}};
}

ModelBuilder& ModelBuilder::tokens() {
  model_["input_type"] = "tokens";
  return *this;
}

ModelBuilder& ModelBuilder::layer(const std::string& type, const std::string& name, nlohmann::json fields,
                                  std::vector<std::string> inputs) {
  fields["type"] = type;
  fields["name"] = name;
  if (!inputs.empty()) fields["inputs"] = inputs;
  model_["layers"].push_back(std::move(fields));
  return *this;
}

Graph ModelBuilder::build() const { return parse_model(model_, "<builder " + model_["name"].get<std::string>() + ">"); }

}  // namespace vdnn
