// `vdnn infer`: test loss and accuracy of saved weights (a `vdnn train --save` checkpoint, or any
// safetensors file with the model's parameter names and shapes), on a Net that only infers
// (plan/planned_inference.h): the device holds the weights and the forward pass's working set,
// nothing else, within --device-memory (default: exactly what it needs). It prints the peak by
// class (weights, activations, workspace) and the smallest budget; a budget below it is refused
// before anything runs, naming the smallest that works.
//
//   vdnn infer --model fmnist_cnn --weights run.safetensors --data fashion-mnist [--json]
//   vdnn infer --model vgg16.onnx --batch 1 --device-memory 600MiB --images x.npy --logits y.npy
//   vdnn infer --model resnet18.onnx --images x.npy --logits y.npy --repeat 20   # median latency per batch
//   vdnn infer --model fmnist_cnn --weights run.safetensors --top-k 3 --predictions top3.json
//   vdnn infer --model resnet18.onnx --data synthetic     # an ONNX model's own initializers
//   vdnn infer --model fmnist_cnn --weights run.safetensors --images x.npy --logits y.npy
// --logits writes every test sample's logits (float32 [samples, classes], io/npy.h) in the data's
// order; --images takes the inputs from a float32 .npy [N, C, H, W] (or [N, K]) instead of --data,
// without labels (no loss or accuracy then): the same inputs can go to ONNX Runtime or PyTorch.
// Inputs that are NaN or infinite are refused (no network has an answer for them).
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_isa.h"
#include "commands.h"
#include "conv_algo_cache.h"
#include "data/augment.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "data_flags.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "model_flags.h"
#include "numeric_flags.h"
#include "plan/forward_order.h"
#include "plan/memory_plan.h"
#include "plan/planned_inference.h"
#include "planning/step_calibration.h"
#include "rewrites/fc_split.h"
#include "rewrites/inference_rewrites.h"
#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "runtime/trainer.h"
#include "util/atomic_file.h"
#include "util/json_dump.h"
#include "util/size_parse.h"
#include "util/text_file.h"
#include "util/text_list.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

struct InferOptions {
  ModelFlags model;
  std::string images, logits, device_memory, host_memory, predictions, conv_algo = "auto", algo_cache;
  DataSource source;
  int threads = 0, repeat = 0, top_k = 0;
  bool seed_given = false, json = false, keep_graph = false;
  std::string stream_weights = "auto";
  std::string precision = "fp32";
};

// Inputs that are NaN or infinite have no answer: a ReLU or max pool turns NaN into 0, so a file of
// NaN gave every sample the same finite logits. Refused naming the first such sample.
void check_finite_images(const Dataset& d, const std::string& path) {
  const auto bad = std::find_if(d.images.begin(), d.images.end(), [](float v) { return !std::isfinite(v); });
  if (bad == d.images.end()) return;
  const int64_t per_sample = d.channels * d.height * d.width;
  const auto count = std::count_if(bad, d.images.end(), [](float v) { return !std::isfinite(v); });
  VDNN_THROW("--images " << path << ": sample " << (bad - d.images.begin()) / per_sample << " holds " << *bad << " ("
                         << count << " of the file's " << d.images.size()
                         << " values are NaN or infinite); expected finite inputs");
}

// --images: the array as a dataset without labels (every label 0, and no loss or accuracy reported).
Dataset images_dataset(const std::string& path, const Graph& graph) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const Error& e) {
    VDNN_THROW("--images " << e.what());
  }
  if ((a.shape.size() != 4 && a.shape.size() != 2) || a.shape[0] < 1)
    VDNN_THROW("--images " << path << ": shape " << shape_text(a.shape)
                           << ", expected [N, C, H, W] or [N, K] with N >= 1");
  Dataset d;
  d.count = a.shape[0];
  d.channels = a.shape[1];
  d.height = a.shape.size() == 4 ? a.shape[2] : 1;
  d.width = a.shape.size() == 4 ? a.shape[3] : 1;
  d.classes = graph.classes();
  d.images = std::move(a.data);
  d.labels.assign(static_cast<size_t>(d.count), 0);
  d.name = path;
  check_finite_images(d, path);
  return d;
}

// The median wall time of one forward pass over the data's first batch, after one warm-up pass.
double median_batch_seconds(Net& net, const Dataset& data, int repeat) {
  net.set_batch(data.images.data(), data.labels.data(), std::min(net.batch(), data.count));
  return median_forward_seconds(net, 1, repeat);
}

// --conv-algo fastest: per layer the algorithm with the fastest forward kernel as the profiler
// measures it on this CPU (a few seconds; kept in --algo-cache when given, conv_algo_cache.h), the
// choice `vdnn plan --inference --device cpu` predicts with. (One family for every convolution,
// auto, direct or winograd, is options.conv_algo already: infer_net_options.)
void set_conv_algos(const InferOptions& o, const Graph& graph, NetOptions& options) {
  if (o.conv_algo == "fastest") options.conv_algos = fastest_conv_algos(graph, options.batch, o.algo_cache);
}

// The layers whose weights an inference Net streams from host memory (plan/planned_inference.h).
std::vector<std::string> streamed_layers(const Net& net) {
  std::vector<std::string> names;
  const std::vector<bool>& streamed = net.streamed_weights();
  for (size_t i = 0; i < streamed.size(); ++i)
    if (streamed[i]) names.push_back(net.graph().nodes()[i].layer->name());
  return names;
}

// --top-k K --predictions FILE: per sample, the K most probable classes (softmax of the logits), as
// JSON {"k": K, "samples": [{"classes": [...], "probabilities": [...]}, ...]} in the data's order.
void write_top_k(const std::string& path, const std::vector<float>& logits, int classes, int k) {
  nlohmann::json samples = nlohmann::json::array();
  std::vector<int> order(static_cast<size_t>(classes));
  for (size_t first = 0; first + classes <= logits.size(); first += classes) {
    const float* x = logits.data() + first;
    const float top = *std::max_element(x, x + classes);
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(x[c] - top));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    nlohmann::json classes_out = nlohmann::json::array(), probabilities = nlohmann::json::array();
    for (int i = 0; i < k; ++i) {
      classes_out.push_back(order[i]);
      probabilities.push_back(std::exp(static_cast<double>(x[order[i]] - top)) / sum);
    }
    samples.push_back({{"classes", classes_out}, {"probabilities", probabilities}});
  }
  write_text_file(path, dump_json(nlohmann::json{{"k", k}, {"samples", samples}}) + "\n");
}

// The inference Net's options the flags give, by the library's rules on them (runtime/net_settings.h:
// precision and convolution algorithm, the budget within host memory); the seed, streaming and
// per-layer algorithms come later.
NetOptions infer_net_options(const InferOptions& o) {
  const bool fastest = o.conv_algo == "fastest";  // measured later (set_conv_algos)
  NetSettings s{
      .batch = o.model.batch, .precision = o.precision, .conv_algo = fastest ? "auto" : o.conv_algo, .inference = true};
  s.device_memory = parse_budget(o.device_memory, "--device-memory");
  s.host_memory = parse_budget(o.host_memory, "--host-memory");
  NetOptions options = net_options(s, OptionNames{});
  if (options.precision != Precision::kFp32) {
    if (fastest)
      VDNN_THROW("--conv-algo fastest measures fp32 kernels; with --precision " << o.precision
                                                                                << " use auto or direct");
    require_native_bf16();
  }
  return options;
}

// The weights to evaluate: the --weights file, or an ONNX model's own initializers (none for a
// network without parameters). Their metadata sets the defaults the run evaluates with: the
// synthetic data's seed (the training seed, unless --seed), and an image folder's recipe (imagenet:
// resize by 256/224, then center-crop, as `vdnn train` evaluated them).
SafeTensors weights_to_evaluate(InferOptions& o, NetworkSource& model) {
  std::optional<SafeTensors> file = o.model.read_weights();
  if (!file && model.initial_weights.tensors.empty() && model.graph.parameter_count(/*trainable_only=*/false) > 0)
    VDNN_THROW("--weights is required: model '" << o.model.name << "' has " << model.graph.parameter_count()
                                                << " parameters and carries no values for them (a zoo or JSON model "
                                                   "has none; give the file `vdnn train --save` wrote)");
  SafeTensors weights = file ? std::move(*file) : std::move(model.initial_weights);
  if (auto seed = weights.metadata.find("seed"); !o.seed_given && seed != weights.metadata.end()) {
    const std::string& s = seed->second;
    if (std::from_chars(s.data(), s.data() + s.size(), o.source.seed).ptr != s.data() + s.size() || s.empty())
      VDNN_THROW("--weights " << o.model.weights << ": metadata 'seed' is '" << s << "', expected an integer");
  }
  if (auto augment = weights.metadata.find("augment"); augment != weights.metadata.end()) {
    const std::string& name = augment->second;  // augmentation_name(): "imagenet", "resized crop[, flip]"
    o.source.augment.resized_crop = name == "imagenet" || name.rfind("resized crop", 0) == 0;
  }
  return weights;
}

// The samples to evaluate: --data's test split, or --images (no labels); --top-k checked against
// the model's classes (default: 5, or every class if fewer).
Dataset data_to_evaluate(InferOptions& o, const Graph& graph) {
  const Dataset test = o.images.empty() ? load_data(o.source, graph, Split::kTest) : images_dataset(o.images, graph);
  check_data_fits(graph, test);
  if (const std::string line = adaptation_line({&test}); !line.empty())  // on stderr beside --json's output
    std::fprintf(o.json ? stderr : stdout, "%s\n", line.c_str());
  if (o.top_k == 0) o.top_k = std::min(5, graph.classes());
  if (o.top_k > graph.classes())
    VDNN_THROW("--top-k " << o.top_k << " exceeds the " << graph.classes() << " classes of model '" << graph.name()
                          << "'; valid: 1.." << graph.classes());
  return test;
}

// A --batch above the samples there are: the Net is planned for one batch of them all (PyTorch's
// DataLoader likewise gives one smaller batch), not for memory no batch would use. Returns the
// line that says so ("" when --batch fits the data).
std::string fit_batch_to_data(InferOptions& o, NetOptions& options, const Dataset& data) {
  if (o.model.batch <= data.count) return "";
  const std::string note = VDNN_MSG("--batch " << o.model.batch << " is more than the " << data.count << " samples of "
                                               << data.name << ": one batch of " << data.count << " holds them all");
  o.model.batch = options.batch = data.count;
  return note;
}

// How the graph was made ready for inference, for the JSON and the text.
struct InferenceGraph {
  InferenceRewrites rewrites;  // batch norms folded, dropouts removed (not with --keep-graph)
  FcSplit split;               // wide fc layers cut into column blocks, to stream under a budget
  ForwardOrder order;          // branches in the order that needs the least memory
};

InferenceGraph prepare_graph(const InferOptions& o, const NetOptions& options, Graph& graph, SafeTensors& weights) {
  InferenceGraph g;
  if (!o.keep_graph) g.rewrites = rewrite_for_inference(graph, weights);
  // Under a budget, wide fc layers are cut into column blocks, to be streamed a block at a time.
  // (Not in bf16: the blocks' concat would write the logits, which only an fc or flatten may there.)
  if (!o.keep_graph && options.device_memory > 0 && options.stream_weights && options.precision == Precision::kFp32)
    g.split = split_wide_fc(graph, weights, streaming_block_bytes(graph));
  // Branches in the order that needs the least memory (plan/forward_order.h); the model's own when
  // it cannot be beaten.
  g.order = forward_order(graph, o.model.batch);
  if (g.order.moved > 0) graph = std::move(graph).reordered(g.order.order);
  return g;
}

// What the run measured and how, for the JSON and the text.
struct InferRun {
  InferenceGraph graph;
  std::string weights_sha256;   // of the weights as given (the folded ones hash otherwise)
  std::string step;             // the weights' metadata "step" ("" without one)
  std::string batch_note;       // --batch above the samples: the batch taken instead
  EvalResult eval;
  double batch_seconds = 0;  // --repeat: the median
};

// Evaluates the data, writes --logits and --predictions, and times --repeat passes.
void evaluate(const InferOptions& o, Net& net, const Dataset& test, InferRun& run) {
  std::vector<float> logits;
  const bool keep_logits = !o.logits.empty() || !o.predictions.empty();
  run.eval = Trainer(net, TrainConfig{}).evaluate(test, keep_logits ? &logits : nullptr);
  if (!o.logits.empty()) write_npy(o.logits, {run.eval.samples, net.graph().classes()}, logits);
  if (!o.predictions.empty()) write_top_k(o.predictions, logits, net.graph().classes(), o.top_k);
  if (o.repeat > 0) run.batch_seconds = median_batch_seconds(net, test, o.repeat);
}

void print_json(const InferOptions& o, const Net& net, const Dataset& test, const InferRun& run) {
  const InferencePeak peak = inference_peak(net.eval_plan());
  const EvalResult& r = run.eval;
  const InferenceGraph& g = run.graph;
  nlohmann::json j = {
      {"model", net.graph().name()},
      {"weights", o.model.weights},
      {"data", test.name},
      {"samples", r.samples},
      {"batch", o.model.batch},
      {"precision", o.precision},
      {"weights_sha256", run.weights_sha256},
      {"peak_bytes", peak.total},
      {"smallest_budget_bytes", net.smallest_resident_budget()},
      {"arena_bytes", net.arena_bytes()},
      {"peak_by_class", {{"weights", peak.weights}, {"activations", peak.activations}, {"workspace", peak.workspace}}}};
  if (o.images.empty()) j["test_loss"] = r.loss, j["test_accuracy"] = r.accuracy;
  if (!o.logits.empty()) j["logits"] = o.logits;
  if (!o.predictions.empty()) j["predictions"] = o.predictions;
  if (o.repeat > 0) j["batch_seconds_median"] = run.batch_seconds, j["repeat"] = o.repeat;
  j["direct_convolutions"] = net.convolutions_made_direct();
  j["streamed_layers"] = streamed_layers(net);
  j["streamed_bytes_per_batch"] = net.train_program().streamed_bytes();
  j["smallest_streamed_budget_bytes"] = net.smallest_streamed_budget();
  j["host_bytes"] = net.host_bytes();  // the streamed weights' host copies, taken once
  j["fc_split"] = {{"layers_split", g.split.layers_split}, {"blocks", g.split.blocks}, {"notes", g.split.notes}};
  j["rewrites"] = {{"batch_norms_folded", g.rewrites.batch_norms_folded},
                   {"dropouts_removed", g.rewrites.dropouts_removed},
                   {"notes", g.rewrites.notes}};
  j["forward_order"] = {{"moved_layers", g.order.moved},
                        {"activation_peak_bytes", g.order.peak_bytes},
                        {"model_order_activation_peak_bytes", g.order.model_peak_bytes}};
  if (!run.step.empty()) j["step"] = run.step;
  if (!run.batch_note.empty()) j["batch_note"] = run.batch_note;
  std::printf("%s\n", dump_json(j, 2).c_str());
}

// The text's first lines: what ran, and the device memory it planned.
void print_memory_lines(const InferOptions& o, const Net& net, const Dataset& test, const InferRun& run) {
  const InferencePeak peak = inference_peak(net.eval_plan());
  if (!run.batch_note.empty()) std::printf("%s\n", run.batch_note.c_str());
  std::printf("model %s, weights %s%s; data %s (%lld samples), batch %lld\n", net.graph().name().c_str(),
              (o.model.weights.empty() ? "(its ONNX initializers)" : o.model.weights.c_str()),
              !run.step.empty() ? (" (step " + run.step + ")").c_str() : "", test.name.c_str(),
              static_cast<long long>(run.eval.samples), static_cast<long long>(o.model.batch));
  std::printf(
      "device memory: peak %s = weights %s + activations up to %s + workspace up to %s; smallest budget %s "
      "(%s with every weight streamed from host memory); arena %s\n",
      format_bytes(peak.total).c_str(), format_bytes(peak.weights).c_str(), format_bytes(peak.activations).c_str(),
      format_bytes(peak.workspace).c_str(), describe_budget(net.smallest_resident_budget()).c_str(),
      describe_budget(net.smallest_streamed_budget()).c_str(), format_bytes(net.arena_bytes()).c_str());
}

// The text's notes on what the graph and the Net changed to fit: folds, fc blocks, streamed
// weights, direct convolutions, the forward order.
void print_graph_notes(const Net& net, const InferRun& run) {
  const InferenceGraph& g = run.graph;
  if (g.rewrites.batch_norms_folded + g.rewrites.dropouts_removed > 0)
    std::printf("graph for inference: batch norms folded into their convolution or fc: %d, dropouts removed: %d\n",
                g.rewrites.batch_norms_folded, g.rewrites.dropouts_removed);
  for (const std::string& note : g.split.notes) std::printf("to stream under --device-memory: %s\n", note.c_str());
  if (const std::vector<std::string> streamed = streamed_layers(net); !streamed.empty())
    std::printf(
        "weights streamed from host memory, one weighted layer ahead: %s per batch, %zu layers (%s); "
        "their host copies take %s\n",
        format_bytes(net.train_program().streamed_bytes()).c_str(), streamed.size(), join_list(streamed).c_str(),
        format_bytes(net.host_bytes()).c_str());
  if (const std::vector<std::string> direct = net.convolutions_made_direct(); !direct.empty())
    std::printf("to fit --device-memory, %zu convolutions run direct instead of their fastest algorithm: %s\n",
                direct.size(), join_list(direct).c_str());
  if (g.order.moved > 0)
    std::printf("forward order: %d layers moved, live activations %s instead of %s in the model's order (fp32)\n",
                g.order.moved, format_bytes(g.order.peak_bytes).c_str(),
                format_bytes(g.order.model_peak_bytes).c_str());
}

// The text's last lines: the loss and accuracy, the latency, the files written.
void print_results(const InferOptions& o, const Net& net, const InferRun& run) {
  const EvalResult& r = run.eval;
  if (o.images.empty()) std::printf("test loss %.4f  test acc %.4f\n", r.loss, r.accuracy);
  if (o.repeat > 0)
    std::printf("latency: %.3f ms per batch of %lld (median of %d)\n", run.batch_seconds * 1e3,
                static_cast<long long>(o.model.batch), o.repeat);
  if (!o.predictions.empty())
    std::printf("top-%d predictions of %lld samples written to %s\n", o.top_k, static_cast<long long>(r.samples),
                o.predictions.c_str());
  if (!o.logits.empty())
    std::printf("logits [%lld, %d] written to %s\n", static_cast<long long>(r.samples), net.graph().classes(),
                o.logits.c_str());
}

// Weights trained on an image folder, evaluated on another: the same class folders in the same
// order, else each label names another class than the one the weights learned and the accuracy
// measures nothing (the counts alone matched before).
void check_same_classes(const InferOptions& o, const SafeTensors& weights, const Dataset& test) {
  const auto trained = weights.metadata.find("class_names");
  if (trained == weights.metadata.end() || test.class_names.empty()) return;
  const std::string evaluated = class_names_metadata(test.class_names);
  if (evaluated != trained->second)
    VDNN_THROW("--data " << o.source.data << ": its classes " << evaluated << " are not those --weights "
                         << o.model.weights << " was trained on, " << trained->second
                         << ", in label order (class folders sorted by name): evaluate on a folder of the same "
                            "classes");
}

int run_infer(InferOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  NetOptions options = infer_net_options(o);
  check_output_files({{"--logits", o.logits}, {"--predictions", o.predictions}});
  check_algo_cache_path(o.algo_cache);
  NetworkSource model = o.model.load();
  SafeTensors weights = weights_to_evaluate(o, model);
  Graph graph = std::move(model.graph);
  const Dataset test = data_to_evaluate(o, graph);
  check_same_classes(o, weights, test);
  InferRun run;
  run.batch_note = fit_batch_to_data(o, options, test);
  run.weights_sha256 = check_weights(weights, graph);  // what `vdnn train` reported for them
  if (auto step = weights.metadata.find("step"); step != weights.metadata.end()) run.step = step->second;
  options.seed = o.source.seed;
  options.stream_weights = o.stream_weights == "auto";
  run.graph = prepare_graph(o, options, graph, weights);
  set_conv_algos(o, graph, options);
  Net net(std::move(graph), options);
  load_weights(std::move(weights), net);  // each tensor's host copy goes once the Net holds it
  evaluate(o, net, test, run);
  if (o.json) {
    print_json(o, net, test, run);
  } else {
    print_memory_lines(o, net, test, run);
    print_graph_notes(net, run);
    print_results(o, net, run);
  }
  return 0;
}

// The flags that apply only with some others (tools/flag_rules.h).
FlagRules infer_flag_rules(const CLI::App& app, const std::shared_ptr<InferOptions>& o) {
  FlagRules rules(app);
  add_data_rules(rules, app, {.data = o->source.data, .flags = o->source, .images = &o->images});
  rules.add({"--seed"},
            {"with --data synthetic (the seed of its samples)",
             [o] { return o->images.empty() && o->source.data == "synthetic"; },
             [o] { return o->images.empty() ? "with --data " + o->source.data : "with --images " + o->images; }});
  rules.add({"--top-k"}, with_flag(app, "--predictions", "FILE.json (where the top classes are written)"));
  rules.add({"--algo-cache"}, one_of("--conv-algo", o->conv_algo, {"fastest"}, "it keeps what fastest measures"));
  rules.add({"--stream-weights"},
            with_flag(app, "--device-memory", "BUDGET (without a budget every weight stays on the device)"));
  rules.add({"--host-memory"},
            {"with --device-memory and --stream-weights auto (it holds the host copies of streamed weights)",
             [o] { return !o->device_memory.empty() && o->stream_weights == "auto"; },
             [o] { return o->device_memory.empty() ? "without --device-memory" : "with --stream-weights never"; }});
  return rules;
}

}  // namespace

Command add_infer_command(CLI::App& app) {
  auto o = std::make_shared<InferOptions>();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_model_flags(app, o->model,
                  {.model_required = true,
                   .weights_help = "safetensors file, e.g. from `vdnn train --save` (default for an ONNX model: its "
                                   "initializers)"});
  CLI::Option* data =
      app.add_option("--data", o->source.data,
                     "fashion-mnist, synthetic, or a folder: CIFAR-10/100 binary batches, image folders "
                     "(DIR/val/<class>/*.jpg|png, else DIR/test/...: resized and center-cropped) or "
                     "Fashion-MNIST IDX files")
          ->capture_default_str();
  add_image_folder_flags(app, o->source);
  add_token_data_flags(app, o->source);
  CLI::Option* logits = app.add_option("--logits", o->logits,
                                       "write every sample's logits to this .npy file (float32 [samples, classes])");
  app.add_option("--images", o->images,
                 "inputs from a float32 .npy [N, C, H, W] (or [N, K]) instead of --data; "
                 "no labels, so no loss or accuracy")
      ->excludes(data)
      ->needs(logits);
  app.add_option("--device-memory", o->device_memory,
                 "device budget for weights + activations + workspace, e.g. 64MiB (default: exactly what it needs; "
                 "too small is refused with the smallest that works)");
  app.add_option("--host-memory", o->host_memory,
                 "host memory for the streamed weights' host copies, e.g. 512MiB (default: what they need; "
                 "too small is refused with the smallest that works)");
  app.add_option("--precision", o->precision,
                 "fp32, or bf16: activations and conv/fc arithmetic in bfloat16 (half the activation memory), "
                 "the weights read from fp32; needs a CPU with AVX512_BF16 or AMX")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--conv-algo", o->conv_algo,
                 "convolution algorithm: auto (oneDNN picks), direct, winograd, or fastest (per layer, the fastest "
                 "forward kernel measured on this CPU now, as `vdnn plan --inference --device cpu` predicts)")
      ->check(CLI::IsMember({"auto", "direct", "winograd", "fastest"}))
      ->capture_default_str();
  app.add_option("--algo-cache", o->algo_cache,
                 "with --conv-algo fastest: read the per-layer choice from this JSON file, or measure it and write "
                 "it there when the file does not exist (no profiling in later runs)");
  app.add_option("--stream-weights", o->stream_weights,
                 "auto: under --device-memory, weights that do not fit are streamed from host memory (wide fc "
                 "layers cut into blocks); never: every weight stays on the device and a budget below them is refused "
                 "(on the CPU the host copies are the process's memory too)")
      ->check(CLI::IsMember({"auto", "never"}))
      ->capture_default_str();
  app.add_flag("--keep-graph", o->keep_graph,
               "run the graph as trained: no batch norm folded into its convolution, dropout kept (the identity)");
  app.add_option("--repeat", o->repeat, "also time N forward passes of one batch and print the median latency")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--predictions", o->predictions,
                 "write each sample's top-k classes and probabilities to this JSON file");
  app.add_option("--top-k", o->top_k, "classes per sample in --predictions (default 5, or every class if fewer)")
      ->check(CLI::Range(1, kMaxClasses));
  app.add_option("--synthetic-samples", o->source.synthetic_samples,
                 "--data synthetic: training samples of the run (the test split is a quarter of them)")
      ->check(CLI::Range(int64_t{1}, kMaxSyntheticSamples))
      ->capture_default_str();
  app.add_option("--seed", o->source.seed, "--data synthetic: its seed (default: the weights' training seed)")
      ->each([o](const std::string&) { o->seed_given = true; });
  app.add_option("--threads", o->threads, "oneDNN/OpenMP threads (default: all cores)")->check(threads_check());
  app.add_flag("--json", o->json, "print JSON instead of text");
  return {[o] { return run_infer(*o); }, infer_flag_rules(app, o)};
}

}  // namespace vdnn::cli
