// tools/model_flags.h — the flags naming the network a subcommand works on, declared once for
// every subcommand that takes them: --model (a zoo name, JSON or ONNX file), --input and
// --classes (overrides of the model's input shape and class count), --batch, and --weights
// (a safetensors file) where the command reads weights.
//
// Model: ModelFlags holds what was given; add_model_flags declares the flags with the help text
// every command shares (ModelFlagsUse says where a command's differs, and which flags it takes).
// load() and read_weights() turn them into the network and its weights, with errors naming the flag.
//
//   ModelFlags model{.name = "fmnist_cnn"};
//   add_model_flags(app, model);                 // --model, --input, --classes, --batch
//   ...                                          // after parsing:
//   NetworkSource source = model.load();         // throws vdnn::Error naming --input if it is bad
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "interop/network_source.h"
#include "io/model_file.h"
#include "io/safetensors.h"

namespace vdnn::cli {

struct ModelFlags {
  std::string name;     // --model; its default is shown in --help (none when required)
  std::string input;    // --input CxHxW; "": the model's own
  int classes = 0;      // --classes; 0: the model's own
  int64_t batch = 128;  // --batch
  std::string weights;  // --weights (ModelFlagsUse::weights_help); "": none given

  // --input parsed (an error names --input) and --classes.
  ModelOptions options() const;
  // load_network(name, options()): the graph, and an ONNX model's initializers; an ONNX import's
  // notes (an older opset converted, a trailing Softmax) go to stderr, "note: " and one line each.
  NetworkSource load() const;
  // The --weights file (read_weights_file, with its batch-norm counters); none without --weights.
  // A bad file is an error naming --weights.
  std::optional<SafeTensors> read_weights() const;
};

// What a command's flags say where they differ from the shared ones.
struct ModelFlagsUse {
  bool model_required = false;  // --model has no default
  const char* model_help = "model name (see `vdnn models`), JSON or ONNX file";
  bool classes = true;                    // --classes too (vdnn load: only the input shape matters)
  const char* batch_help = "batch size";  // --batch's help
  const char* weights_help = nullptr;     // --weights, with this help; null: no --weights
};

// An ONNX import's notes on stderr, "note: " and one line each, each once per process (plan and
// profile load their model more than once).
void print_import_notes(const std::vector<std::string>& notes);

// Declares --model, --weights (if the command reads weights), --batch, --input and --classes (if
// it takes them), in that order, bound to `flags`.
void add_model_flags(CLI::App& app, ModelFlags& flags, const ModelFlagsUse& use = {});

}  // namespace vdnn::cli
