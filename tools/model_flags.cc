#include "model_flags.h"

#include <cstdio>
#include <set>

#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "vdnn/error.h"

namespace vdnn::cli {

ModelOptions ModelFlags::options() const {
  ModelOptions mo;
  if (!input.empty()) mo.input = parse_shape(input, "--input");
  if (classes > 0) mo.classes = classes;
  return mo;
}

void print_import_notes(const std::vector<std::string>& notes) {
  static std::set<std::string> printed;  // a command may load its model more than once (plan, profile)
  for (const std::string& note : notes)
    if (printed.insert(note).second) std::fprintf(stderr, "note: %s\n", note.c_str());
}

NetworkSource ModelFlags::load() const {
  NetworkSource source = load_network(name, options());
  print_import_notes(source.notes);
  return source;
}

std::optional<SafeTensors> ModelFlags::read_weights() const {
  if (weights.empty()) return std::nullopt;
  try {
    return read_weights_file(weights);
  } catch (const Error& e) {
    VDNN_THROW("--weights " << e.what());
  }
}

void add_model_flags(CLI::App& app, ModelFlags& flags, const ModelFlagsUse& use) {
  CLI::Option* model = app.add_option("--model", flags.name, use.model_help);
  if (use.model_required)
    model->required();
  else
    model->capture_default_str();
  if (use.weights_help) app.add_option("--weights", flags.weights, use.weights_help);
  app.add_option("--batch", flags.batch, use.batch_help)
      ->check(CLI::Range(int64_t{1}, kMaxBatch))
      ->capture_default_str();
  app.add_option("--input", flags.input, "override the model's input shape, CxHxW");
  if (use.classes)
    app.add_option("--classes", flags.classes, "override the model's class count")
        ->check(CLI::Range(kMinClasses, kMaxClasses));
}

}  // namespace vdnn::cli
