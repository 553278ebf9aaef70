// tests/docs/header_examples.cpp — the usage examples of header comments, compiled against the
// current API by tests/docs/test_header_examples.cc (with -fsyntax-only: nothing here runs).
//
// Each block `// == <header under src/>` holds that header's example lines as written there (its
// trailing comments may be left off); a line marked `// (adapted)` stands in for pseudo-code ("...",
// a placeholder) and is not compared. Change an example and its block together: the test checks
// that every other line of a block is a line of its header's example, and that the whole compiles.
// Not in the test binary (its extension is .cpp, the build globs *.cc).
// Its lines must equal the header comments' example lines, so clang-format leaves it alone:
// clang-format off
#include <cassert>
#include <cstdio>
#include <iostream>

#include "backend_api/kernel_args.h"
#include "core/conv_algo.h"
#include "core/graph.h"
#include "core/graph_digest.h"
#include "core/layer.h"
#include "core/layer_config.h"
#include "core/layer_kind.h"
#include "core/precision.h"
#include "core/layer_registry.h"
#include "core/shape.h"
#include "data/batch_loader.h"
#include "data/data_source.h"
#include "data/dataset.h"
#include "data/augment.h"
#include "data/cifar.h"
#include "data/fashion_mnist.h"
#include "data/idx_file.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/image_transform.h"
#include "data/synthetic.h"
#include "data/char_text.h"
#include "data/token_file.h"
#include "data/token_windows.h"
#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/rank_agreement.h"
#include "device/cpu_device.h"
#include "rewrites/fc_split.h"
#include "rewrites/inference_rewrites.h"
#include "io/json_text.h"
#include "backends/cpu/profiler.h"
#include "io/model_file.h"
#include "io/npy.h"
#include "rewrites/param_lookup.h"
#include "io/safetensors.h"
#include "rewrites/slice_runs.h"
#include "layers/conv.h"
#include "layers/elementwise.h"
#include "layers/fc.h"
#include "layers/softmax_ce.h"
#include "memory/host_buffer.h"
#include "memory/memory_class.h"
#include "memory/offset_allocator.h"
#include "memory/residency.h"
#include "plan/batch_efficiency.h"
#include "plan/conv_algorithms.h"
#include "plan/device_profile.h"
#include "plan/block_placement.h"
#include "plan/collectives.h"
#include "plan/memory_plan.h"
#include "plan/network_costs.h"
#include "plan/forward_order.h"
#include "plan/planned_inference.h"
#include "plan/planner.h"
#include "plan/policy.h"
#include "plan/program.h"
#include "plan/prefetch_points.h"
#include "plan/program_builder.h"
#include "plan/storage_decision.h"
#include "plan/simulator.h"
#include "plan/step_timeline.h"
#include "report/chart.h"
#include "report/chrome_trace.h"
#include "report/configuration_chart.h"
#include "report/memory_timeline_chart.h"
#include "report/report.h"
#include "report/svg.h"
#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "runtime/sgd.h"
#include "runtime/adamw.h"
#include "runtime/optimizer.h"
#include "plan/optimizer_state.h"
#include "backend_api/adamw_step.h"
#include "backend_api/host_update.h"
#include "runtime/host_optimizer_step.h"
#include "planning/device_planner.h"
#include "planning/state_placement.h"
#include "planning/device_table.h"
#include "planning/largest_fitting.h"
#include "planning/plan_report.h"
#include "planning/plan_source.h"
#include "planning/planned_policy.h"
#include "planning/step_calibration.h"
#include "runtime/step_recorder.h"
#include "runtime/trainer.h"
#include "util/aligned_buffer.h"
#include "util/atomic_file.h"
#include "util/did_you_mean.h"
#include "util/file_kind.h"
#include "util/gzip_reader.h"
#include "util/host_memory.h"
#include "util/interrupt.h"
#include "util/json_dump.h"
#include "util/mapped_file.h"
#include "util/option_names.h"
#include "util/progress.h"
#include "util/sha256.h"
#include "util/number_text.h"
#include "util/size_parse.h"
#include "util/text_file.h"
#include "util/text_list.h"
#include "util/threshold_search.h"
#include "util/timing_stability.h"
#include "util/utf8.h"
#include "vdnn/error.h"

namespace vdnn {

// What the examples take as given (their free names).
struct Given {
  std::string header, svg_text, model_name;
  std::vector<float> weights;
  size_t budget = 0, feature_map_bytes = 0;
  MappedFile* mapped;
  MappedFile* file;
  nlohmann::json json, json_obj, obj;
  Graph* graph;
  size_t i = 0;
  double peak_bytes = 0, step_seconds = 0, oracle_seconds = 0;
  Program* program;
  CostModel* costs;
  StepRecorder* recorder;
  struct Row {
    std::string label;
    Evaluation e;
  };
  std::vector<Row> rows;
  TrainConfig config;
  int64_t batch = 0;
  TrainResult result;
  Dataset* train_set;
  Dataset* test_set;
  Event copy_event;
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  size_t budget_bytes = 0;
  Net* net;
  Trainer* trainer;
  int64_t step = 0;
  int epoch = 0;
  void *x, *y, *w, *b, *workspace, *host, *buf;
  size_t bytes = 0;
  Backend* backend_;
  int node = 0;
  const ConvLayer* conv_layer;
  Shape in_shape, out_shape;
};

// Stand-ins for the names examples use as pseudo-code.
struct CopyEngine {
  void offload(void*, void*, size_t) {}
};
struct AnyBackend {
  HostMemory host_memory() const { return HostMemory::aligned(); }
};
struct PlanBytes {
  size_t host_bytes = 0;
};
void print(const EpochResult&) {}
void fill(void*) {}

void examples(Given& given) {
  auto& [header, svg_text, model_name, weights, budget, feature_map_bytes, mapped, file, json, json_obj, obj,
         graph, i, peak_bytes, step_seconds, oracle_seconds, program, costs, recorder, rows, config, batch,
         result, train_set, test_set, copy_event, value_bytes, facts, budget_bytes, net, trainer, step, epoch, x, y, w,
         b, workspace, host, buf, bytes, backend_, node, conv_layer, in_shape, out_shape] = given;
  CopyEngine copy_engine;
  AnyBackend backend;
  PlanBytes plan;
  void* device_ptr = nullptr;
  ProgramTensor tensor;
  using Row = Given::Row;

  // == util/number_text.h
  {
    std::string t = exact_text(1.0000001);
    (void)t;  // (adapted)
  }
  // == util/aligned_buffer.h
  {
    AlignedBuffer b(1 << 20);
    float* f = b.as<float>();
    b.bytes();
    (void)f;  // (adapted)
  }
  // == util/atomic_file.h
  {
    AtomicFile out("run.safetensors");
    out.write(header.data(), header.size());
    out.write(weights.data(), weights.size() * sizeof(float));
    out.commit();
  }
  // == util/gzip_reader.h
  {
    GzipReader in(mapped->bytes(), "train-images-idx3-ubyte.gz");  // (adapted)
    uint8_t magic[4];
    if (in.read(magic, 4) < 4) throw Error("truncated" + in.short_read_note());
  }
  // == util/host_memory.h
  {
    if (size_t avail = vdnn::available_host_memory(); avail && budget > avail) {}  // (adapted)
  }
  // == util/interrupt.h
  {
    DeferInterrupts defer;
    for (;;) { if (interrupt_signal()) throw Interrupted{interrupt_signal()}; }  // (adapted)
  }
  // == util/mapped_file.h
  {
    MappedFile f("run.safetensors");
    SafeTensors t = parse_safetensors(f.bytes(), f.path());
    Graph g = parse_model_text(MappedFile("my.json").text(), "my.json");
  }
  // == util/option_names.h
  {
    const OptionNames flags;
    std::string a = flags("host_memory");
    std::string b = OptionNames{OptionNames::kKeywords}("host_memory");
  }
  // == util/progress.h
  {
    int64_t done = 0, total = 0;  // (adapted)
    double images = 0;            // (adapted)
    Progress p(stdout, Progress::Mode::kAuto, "epoch 3/10", "img/s");
    p.update(done, total, /*units done=*/images, "loss 0.43");  // (adapted)
    p.finish();
  }
  // == util/sha256.h
  {
    vdnn::Sha256 h;
    h.update("ab", 2);
    h.update("c", 1);
    std::string hex = h.hex_digest();
    assert(hex == vdnn::sha256_hex("abc", 3));
  }
  // == util/text_list.h
  {
    std::string s = vdnn::join_list({"conv1", "conv2"});
    std::string t = vdnn::join_list({"a", "b"}, " | ");
  }
  // == util/did_you_mean.h
  {
    std::vector<std::string> s = vdnn::closest_names("resnt18", {"resnet18", "resnet50", "vgg16"});
    std::string hint = vdnn::did_you_mean("resnt18", {"resnet18", "vgg16"});
    std::string none = vdnn::did_you_mean("transformer", {"resnet18"});
  }
  // == util/file_kind.h
  {
    const std::string dir = "data";  // (adapted)
    if (std::string why = not_a_folder(dir); !why.empty()) VDNN_THROW("data folder '" << dir << "' " << why);
    int fd = open_regular_file("x.png");
  }
  // == util/json_dump.h
  {
    nlohmann::json report;  // (adapted)
    write_text_file("run.json", dump_json(report, 2) + "\n");
  }
  // == util/utf8.h
  {
    escape_invalid_utf8("conv\xff");
    escape_invalid_utf8("caf\xc3\xa9");
    is_utf8("\xed\xa0\x80");
    size_t at = 0; char32_t c = 0;
    next_code_point("\xc3\xa9!", &at, &c);
  }
  // == util/size_parse.h
  {
    size_t budget = vdnn::parse_size("12GiB", "--device-memory");
    size_t a = vdnn::parse_size("1.5GB", "--host-memory");
    size_t b = vdnn::parse_size("2G", "--device-memory");
    vdnn::parse_size("-1MiB", "--device-memory");
    std::string s = vdnn::format_bytes(size_t{3} << 29);
    std::string t = vdnn::format_bytes(512);
    (void)budget, (void)a, (void)b;  // (adapted)
  }
  // == util/text_file.h
  {
    vdnn::write_text_file("memory.svg", svg_text);
    std::string t = vdnn::read_text_file("costs.json");
  }
  // == util/threshold_search.h
  {
    int64_t n = last_true(99, 1 << 20, [](int64_t b) { return b <= 100; });
    int64_t m = last_true(64, 1 << 20, [](int64_t b) { return b <= 100; }, 64);
    int64_t none = last_true(0, 10, [](int64_t) { return false; });
    (void)n, (void)m, (void)none;  // (adapted)
  }
  // == util/timing_stability.h
  {
    std::vector<Timing> runs;  // (adapted)
    TimingSpread s = timing_spread(runs);
    if (!is_stable(s)) {}  // (adapted)
    double m = median({3.0, 1.0, 2.0, 4.0});
    (void)m;  // (adapted)
  }
  // == memory/host_buffer.h
  {
    HostBuffer region(plan.host_bytes, backend.host_memory(), "host copies");
    copy_engine.offload(device_ptr, region.data() + tensor.host_offset, tensor.bytes);
    HostBuffer::taken_count();
  }
  // == memory/memory_class.h
  {
    OffsetAllocator alloc(1 << 20);
    alloc.allocate(4096, MemoryClass::kFeatureMaps);
    ClassStats s = alloc.stats();
    s.current(MemoryClass::kFeatureMaps);
    to_string(MemoryClass::kFeatureMaps);
    for (MemoryClass c : kAllMemoryClasses) std::cout << to_string(c) << " " << s.peak(c) << "\n";
  }
  // == memory/offset_allocator.h
  {
    OffsetAllocator alloc(1 << 20);
    std::optional<Allocation> a = alloc.allocate(1000, MemoryClass::kFeatureMaps);
    if (!a) {}  // (adapted)
    alloc.in_use_bytes();
    alloc.free(a->handle);
    alloc.all_free();
    alloc.high_water_offset();
  }
  // == memory/residency.h
  {
    Residency r("conv1:out");
    r.to(Residency::kDevice);
    r.to(Residency::kOffloading, copy_event);
    r.to(Residency::kHost);
  }
  // == core/conv_algo.h
  {
    ConvAlgo a = parse_conv_algo("direct");
    std::printf("%s\n", to_string(a));
  }
  // == core/graph.h
  {
    Graph g("tiny", Shape{1, 28, 28}, 10);
    g.add(std::make_unique<ReluLayer>("r"), {});
    g.add(std::make_unique<FcLayer>("fc", FcLayer::Params{10}), {"r"});
    g.add(std::make_unique<SoftmaxCrossEntropyLayer>("loss"), {});
    g.finalize();
    Graph lm("lm", Shape{256}, 50257, InputType::kTokens);
  }
  // == core/graph_digest.h
  {
    const Graph& a = *given.graph;  // (adapted)
    const Graph& b = *given.graph;  // (adapted)
    bool same = graph_digest(a) == graph_digest(b);
    (void)same;  // (adapted)
  }
  // == core/layer.h
  {
    LayerConfig cfg(json, "x.json: layer 'conv1'");
    std::unique_ptr<Layer> conv = make_layer("conv1", "conv", cfg);
    Shape out = conv->infer_shape({Shape{3, 32, 32}});
    bool offload_candidate = conv->backward_reads_input();
    (void)offload_candidate;  // (adapted)
  }
  // == core/layer_config.h
  {
    LayerConfig cfg(json_obj, "models/x.json: layer 'conv1'");
    int64_t out = cfg.positive_int("channels");
    auto [kh, kw] = cfg.pair("kernel", /*fallback=*/{3, 3});
    bool bias = cfg.boolean("bias", true);
    cfg.check_all_used();
    cfg.settings();
    (void)out, (void)bias;  // (adapted)
  }
  // == core/precision.h
  {
    Precision p = parse_precision("bf16");
    std::printf("%s\n", to_string(p));
  }
  // == core/layer_kind.h
  {
    auto offload = [](ValueId) {};  // (adapted)
    const Node& n = graph->nodes()[i];  // (adapted)
    if (n.layer->kind() == LayerKind::kConv) offload(n.inputs[0]);
    std::string s = to_string(LayerKind::kPool);
  }
  // == core/layer_registry.h
  {
    LayerConfig cfg(obj, "x.json: layer 'c1'");
    std::unique_ptr<Layer> layer = make_layer("c1", "conv", cfg);
    for (auto& t : layer_types()) std::cout << t << "\n";
  }
  // == core/shape.h
  {
    Shape s{64, 56, 56};
    s.elements();
    s.to_string();
    s.with_batch(32);
  }
  // == report/chart.h
  {
    Svg svg(960, 400);
    const ChartUnit gib = byte_unit(peak_bytes), ms = time_unit(step_seconds);
    PlotArea plot{.x = 80, .y = 60, .width = 840, .height = 260,
                  .x_max = step_seconds / ms.scale, .y_max = peak_bytes / gib.scale};
    plot.draw_x_axis(svg, "time in the step (" + ms.name + ")");
    plot.draw_y_axis(svg, "device memory (" + gib.name + ")");
    svg.rect(plot.px(0), plot.py(4), plot.px(1) - plot.px(0), plot.py(0) - plot.py(4), {.fill = "red"});
    draw_class_legend(svg, 80, 40);
  }
  // == report/chrome_trace.h
  {
    SimResult r = simulate(*program, *costs);  // (adapted)
    write_chrome_trace("predicted.json", r.timeline(), "vgg16 batch 256, all+fastest, predicted");
    nlohmann::json j = chrome_trace(recorder->timeline(), "fmnist_cnn batch 128, measured");  // (adapted)
  }
  // == report/configuration_chart.h
  {
    std::vector<ConfigurationBar> bars;
    for (const Row& r : rows)
      bars.push_back({r.label, peak_point(r.e.time.memory), r.e.minimum_budget,
                      r.e.time.iteration_seconds, r.e.fits});
    write_text_file("plan.svg", configuration_chart_svg("vgg16, batch 256, titan-x-maxwell", bars,
                                                        size_t{12} << 30, oracle_seconds));
  }
  // == io/json_text.h
  {
    nlohmann::json j = parse_json_text(file->text(), "my.json");  // (adapted)
  }
  // == report/memory_timeline_chart.h
  {
    std::vector<MemoryPanel> panels;
    for (const Row& r : rows) panels.push_back({r.label, r.e.time.memory, r.e.time.iteration_seconds});
    write_text_file("memory.svg", memory_timeline_svg("vgg16, batch 256, titan-x-maxwell", panels,
                                                      size_t{12} << 30));
  }
  // == io/model_file.h
  {
    Graph g = load_model("fmnist_cnn");
    Graph h = load_model("my.json", {.input = Shape{3, 64, 64}, .classes = 100});
    Graph m = parse_model_text(R"({"input": [8], "classes": 2, "layers": []})", "inline");  // (adapted)
    ModelBuilder b("tiny", {1, 8, 8}, 10);
    b.layer("conv", "c1", {{"channels", 4}, {"kernel", 3}}).layer("fc", "fc", {{"units", 10}});
    Graph t = b.layer("softmax_cross_entropy", "loss").build();
    ModelBuilder lm("lm", {16}, 32);
    lm.tokens().layer("embedding", "wte", {{"vocab", 32}, {"dim", 8}}).layer("linear", "head", {{"units", 32}});
    Graph l = lm.layer("token_cross_entropy", "loss").build();
  }
  // == report/report.h
  {
    nlohmann::json r = train_report(model_name, config, batch, result);
    write_json_file("run.json", r);
  }
  // == io/safetensors.h
  {
    SafeTensors f;
    f.metadata["step"] = "500";
    f.tensors.push_back({"conv1.weight", {32, 1, 3, 3}, weights});
    write_safetensors("run.safetensors", f);
    SafeTensors g = read_safetensors("run.safetensors");
    const SafeTensor& w = g.require("conv1.weight", {32, 1, 3, 3});
    (void)w;  // (adapted)
  }
  // == rewrites/inference_rewrites.h
  {
    Graph graph = load_model("resnet18");
    SafeTensors weights = read_weights_file("resnet18.safetensors");
    InferenceRewrites r = rewrite_for_inference(graph, weights);
    Net net(std::move(graph), {.batch = 32});
    load_weights(weights, net);
    net.forward(/*training=*/false);
    (void)r;  // (adapted)
  }
  // == rewrites/slice_runs.h
  {
    Graph g = load_model("vgg_cifar");
    SlicedGraph s = slice_runs(g, /*batch=*/256, {parse_slice_run("conv1_1:pool1:4")});
    s.graph.nodes()[s.node_of[0]].layer->name();
  }
  // == rewrites/fc_split.h
  {
    Graph graph = load_model("vgg16");
    SafeTensors weights = read_weights_file("vgg16.safetensors");
    check_weights(weights, graph);
    FcSplit s = split_wide_fc(graph, weights, 128 << 20);
    Graph plan = load_model("vgg16");
    split_wide_fc(plan, streaming_block_bytes(plan));
    Net net(std::move(graph), {.batch = 1, .inference = true});
    load_weights(std::move(weights), net);
    (void)s;  // (adapted)
  }
  // == rewrites/param_lookup.h
  {
    const Graph graph = load_model("vgg16");  // (adapted)
    const SafeTensors weights;  // (adapted)
    const int node = 0;  // (adapted)
    const ParamSpec& spec = *find_spec(graph, node, "weight");
    const SafeTensor& w = require_param(weights, graph, node, spec, "the fc split of model 'vgg16'");
    (void)w;  // (adapted)
  }
  // == io/npy.h
  {
    const int64_t n = 2, classes = 3;  // (adapted)
    const std::vector<float> logits(n * classes);  // (adapted)
    write_npy("logits.npy", {n, classes}, logits);
    NpyArray x = read_npy("images.npy");
    (void)x;  // (adapted)
  }
  // == report/svg.h
  {
    Svg svg(640, 480);
    svg.rect(10, 40, 100, 50, {.fill = "#4e79a7", .tooltip = "conv1: 12 MiB"});
    svg.line(0, 90, 640, 90, {.stroke = "black", .dash = "6 3"});
    svg.polygon({{0, 480}, {320, 200}, {640, 480}}, {.fill = "#f28e2b"});
    svg.text(320, 24, "Memory over one step", {.size = 16, .anchor = "middle", .bold = true});
    write_text_file("out.svg", svg.str());
  }
  // == comm/communicator.h
  {
    float* grad0 = nullptr;  // (adapted)
    float* grad1 = nullptr;  // (adapted)
    size_t n0 = 0, n1 = 0;   // (adapted)
    float loss = 0;          // (adapted)
    int64_t count = 0;       // (adapted)
    std::unique_ptr<vdnn::Communicator> comm = vdnn::make_communicator({});
    std::vector<vdnn::ReduceBuffer> bucket{{grad0, n0}, {grad1, n1}};
    comm->all_reduce_sum(bucket, 1.0f / comm->size());
    double sums[2] = {loss * count, double(count)};
    comm->sum_host(sums, 2);
  }
  // == comm/mpi_communicator.h
  {
    std::unique_ptr<vdnn::Communicator> comm = vdnn::make_mpi_communicator({.timeout_seconds = 60});
    comm->rank(); comm->size();
  }
  // == comm/rank_agreement.h
  {
    std::unique_ptr<Communicator> single = make_single_rank();  // (adapted)
    Communicator& comm = *single;                                // (adapted)
    check_ranks_agree(comm, {{"the model", "fmnist_cnn 3fa1b2c3d4e5f607"}, {"--batch", "32"}});
    check_ranks_agree(comm, {{"lr", "0.1"}}, "train_step");
  }
  // == plan/collectives.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    Program p = build_program(graph, value_bytes, facts, {Policy::kAll});
    add_collectives(p, {.ranks = 4});
    p.buckets.size();
  }
  // == data/batch_loader.h
  {
    auto train_step = [](float*, int32_t*, int64_t) {};  // (adapted)
    const Dataset& train_set = *given.train_set;          // (adapted)
    vdnn::BatchLoader loader(train_set, /*batch=*/64, /*shuffle=*/true, /*seed=*/1);
    std::vector<float> x(64 * train_set.channels * train_set.height * train_set.width);
    std::vector<int32_t> y(64);
    for (int epoch = 0; epoch < 10; ++epoch) {
      loader.start_epoch(epoch);
      int64_t n = 0;
      while (loader.next(x.data(), y.data(), &n)) train_step(x.data(), y.data(), n);
    }
  }
  // == data/data_source.h
  {
    DataSource source{.data = "synthetic", .synthetic_samples = 256, .seed = 1};
    Dataset train = load_data(source, *graph, Split::kTrain);  // (adapted)
    Dataset test = load_data(source, *graph, Split::kTest);    // (adapted)
  }
  // == data/dataset.h
  {
    vdnn::Dataset d = vdnn::make_synthetic(256, 1, 8, 8, 4, /*seed=*/1);
    int64_t sample = d.channels * d.height * d.width;
    const float* third = d.images.data() + 2 * sample;
    int32_t label = d.labels[2];
    std::cout << d.name << ": " << d.count << " samples\n";
    (void)third, (void)label;  // (adapted)
  }
  // == data/augment.h
  {
    const uint64_t seed = 1, stream = 2;  // (adapted)
    vdnn::Dataset dataset = vdnn::make_synthetic(1, 3, 32, 32, 10, seed);  // (adapted)
    const float* src = dataset.images.data();  // (adapted)
    std::vector<float> out(3 * 32 * 32);  // (adapted)
    float* dst = out.data();  // (adapted)
    Augmentation a = parse_augmentation("cifar", "--augment");
    Rng rng(seed, stream);
    augment_sample(src, dst, 3, 32, 32, dataset.zero_pixel, a, rng);
  }
  // == data/cifar.h
  {
    vdnn::Dataset train = vdnn::load_cifar("/data/cifar-10-batches-bin", /*train=*/true);
    vdnn::Dataset test = vdnn::load_cifar("/data/cifar-100-binary", /*train=*/false);
    bool cifar = vdnn::is_cifar_folder("/data/cifar-10-batches-bin");
    (void)cifar;  // (adapted)
  }
  // == data/fashion_mnist.h
  {
    vdnn::Dataset train = vdnn::load_fashion_mnist(vdnn::kFashionMnistDefaultDir, /*train=*/true);
    vdnn::Dataset test = vdnn::load_fashion_mnist("/my/data", /*train=*/false);
  }
  // == data/idx_file.h
  {
    vdnn::IdxArray a = vdnn::read_idx("/data/train-images-idx3-ubyte.gz");
    int64_t n = a.dims[0];
    uint8_t first_pixel = a.data[0];
    (void)n, (void)first_pixel;  // (adapted)
  }
  // == data/image_decode.h
  {
    ImageSize size = read_image_size("cat.jpg");
    DecodedImage img = decode_image("cat.jpg", 3, [](ImageSize) { return ImageRegion{100, 50, 300, 300}; },
                                    224, 224);
    (void)size, (void)img;  // (adapted)
  }
  // == data/image_transform.h
  {
    const std::string path = "cat.jpg";  // (adapted)
    Rng rng(1);                          // (adapted)
    std::vector<float> out(3 * 224 * 224);  // (adapted)
    float* dst = out.data();             // (adapted)
    DecodedImage img = decode_image(path, 3, [&](ImageSize s) { return random_resized_crop_region(s, rng); },
                                    224, 224);
    resample_region(img, 224, 224, /*flip=*/rng.below(2) == 1, kImageNetMean, kImageNetStd, dst,
                    /*within_region=*/true);
  }
  // == data/image_folder.h
  {
    ImageFolderOptions o{.channels = 3, .height = 224, .width = 224};
    Dataset train = load_image_folder("/data/imagenet/train", o, "imagenet-train");
  }
  // == data/token_windows.h
  {
    auto file = std::make_shared<const MappedFile>("train.bin");
    TokenSequence tokens{.bytes = file->bytes(), .owner = file, .file = file->path()};
    auto windows = std::make_shared<const TokenWindows>(tokens, /*window=*/64, /*vocab=*/50257, /*random=*/true);
    Dataset d = token_dataset(windows, "train.bin");
  }
  // == data/token_file.h
  {
    TokenFileOptions o{.window = 256, .vocab = 65, .train = true};
    Dataset train = load_token_file("data/shakespeare_char/train.bin", o, "shakespeare_char-train");
  }
  // == data/char_text.h
  {
    CharTextOptions o{.window = 256, .train = true};
    Dataset train = load_char_text("input.txt", o, "shakespeare-train");
    const std::string& smallest = train.vocabulary[0];
    write_vocabulary("run.vocab.json", train.vocabulary, "input.txt");
  }
  // == data/synthetic.h
  {
    vdnn::Dataset d = vdnn::make_synthetic(/*count=*/1024, /*c=*/1, /*h=*/28, /*w=*/28,
                                           /*classes=*/10, /*seed=*/42);
  }
  // == plan/block_placement.h
  {
    std::vector<Block> blocks{{1024, 0, 3}, {512, 1, 2}};
    std::vector<size_t> at = place_blocks(blocks, 0);
    (void)at;  // (adapted)
  }
  // == plan/memory_plan.h
  {
    MemoryPlan m = plan_memory(*program, 512 << 20);  // (adapted)
    if (!m.fits) throw Error(m.failure);
    size_t smallest = minimum_budget(*program);  // (adapted)
    (void)smallest;  // (adapted)
  }
  // == planning/step_calibration.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    NetworkCosts costs = measure_costs(graph, 64, {});
    calibrate_kernels(costs, load_model("vgg_cifar"), 64);
    costs.kernel_scale;
  }
  // == planning/device_planner.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    const DevicePlanner p(graph, 256, {.device = "titan-x-maxwell"}, {.optimizer = OptimizerKind::kAdamW});
    PlanTable t = plan_table(p.planner, p.budget, "auto", Prefetch::kVdnn);
    (void)t;  // (adapted)
  }
  // == planning/plan_source.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    PlanInputs in = plan_inputs(graph, 256, {.device = "titan-x-maxwell"});
    Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  }
  // == planning/planned_policy.h
  {
    Graph graph = load_model("fmnist_cnn");  // (adapted)
    NetOptions options{.batch = 32};
    PlannedPolicy p = choose_planned_policy(graph, 32, "auto", 24 << 20, {}, SyncMode::kEvent, options);
    std::printf("%s\n", p.summary.c_str());
    Net net(std::move(graph), options);
  }
  // == planning/plan_report.h
  {
    const Graph& g = *given.graph;                                              // (adapted)
    const PlanInputs in = plan_inputs(g, 32, {});                               // (adapted)
    const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);  // (adapted)
    PlanTable t = plan_table(planner, budget, "", Prefetch::kVdnn);
    nlohmann::json j = plan_json(t, {.model = g.name(), .batch = 32, .device = in.device});
  }
  // == planning/largest_fitting.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    const PlanAt plan_at = [&](const std::string& policy, int64_t batch) {
      const PlanInputs in = plan_inputs(graph, batch, {.device = "titan-x-maxwell"});
      const Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
      return plan_table(planner, in.device_memory_bytes, policy, Prefetch::kVdnn);
    };
    std::vector<PolicyLargest> rows = largest_per_policy(plan_at, {"none", "conv", "all", "dyn", "auto"}, 1 << 20);
    rows[4].largest;
    rows[4].at->rows.front().label;
  }
  // == planning/device_table.h
  {
    DeviceTableRequest r{.devices = {"v100-16gb", "h100"}, .optimizer = OptimizerKind::kAdamW};
    std::vector<DevicePlan> rows = plan_devices(load_model("gpt2"), 8, r);
    nlohmann::json j = device_table_json(rows, {.model = "gpt2", .optimizer = OptimizerKind::kAdamW, .batch = 8});
  }
  // == runtime/trainer.h
  {
    const Dataset& train_set = *given.train_set;  // (adapted)
    const Dataset& test_set = *given.test_set;    // (adapted)
    Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1});
    TrainConfig cfg;
    Trainer trainer(net, cfg);
    TrainResult r = trainer.run(train_set, &test_set, [](const EpochResult& e) { print(e); });
    r.test_accuracy; r.images_per_second; r.weights_sha256;
  }
  // == plan/planned_inference.h
  {
    const Graph& g = *given.graph;  // (adapted)
    PlannedInference p = plan_inference(g, value_bytes, facts, 64 << 20);  // (adapted)
    if (!p.fits) throw Error(inference_refusal(g, batch, p));  // (adapted)
    InferencePeak peak = inference_peak(p.plan);
    (void)peak;  // (adapted)
  }
  // == plan/forward_order.h
  {
    Graph g = load_model("googlenet");  // (adapted)
    ForwardOrder o = forward_order(g, 32);  // (adapted)
    if (o.peak_bytes < o.model_peak_bytes) g = std::move(g).reordered(o.order);  // (adapted)
  }
  // == plan/program.h
  {
    Program p = build_program(*graph, value_bytes, facts, {Policy::kAll, SyncMode::kEvent});  // (adapted)
    MemoryPlan m = plan_memory(p, budget_bytes);
    std::cout << p.to_text();
  }
  // == plan/program_builder.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    Program train = build_program(graph, value_bytes, facts, {Policy::kConv, SyncMode::kEvent});
    Program eval = build_program(graph, value_bytes, facts, {Policy::kNone, SyncMode::kEvent, false});
    ProgramOptions mixed{Policy::kNone, SyncMode::kEvent};
    mixed.decisions.values.assign(graph.values().size(), {});
    mixed.decisions.values[2] = {StorageAction::kRecompute};
    Program recompute = build_program(graph, value_bytes, facts, mixed);
  }
  // == plan/prefetch_points.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    ProgramOptions options{Policy::kAll, SyncMode::kEvent};
    Program all = build_program(graph, value_bytes, facts, options);
    options.decisions = decisions_of(all, graph);
    const int last = static_cast<int>(graph.nodes().size()) - 1;
    for (const PrefetchSlot& s : prefetch_slots(all))
      decision_for(options.decisions, graph, s).prefetch_at = std::min(s.issued_at + 2, last);
    Program earlier = build_program(graph, value_bytes, facts, options);
  }
  // == plan/storage_decision.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    StepDecisions d;
    d.values.assign(graph.values().size(), {});
    d.values[3] = {StorageAction::kRecompute};
    d.values[5] = {StorageAction::kOffload};
    d.values[7] = {StorageAction::kOffload, 12};
    d.values[8] = {StorageAction::kOffload, -1, 9};
    ProgramOptions o{Policy::kNone, SyncMode::kEvent};
    o.decisions = d;
  }
  // == plan/simulator.h
  {
    SimResult r = simulate(*program, *costs);  // (adapted)
    r.iteration_seconds; r.stall_seconds; r.busy_seconds[static_cast<int>(StreamKind::kCompute)];
    r.busy_seconds[static_cast<int>(StreamKind::kComm)]; r.all_reduce_hidden;
    write_chrome_trace("predicted.json", r.timeline(), "vgg16 predicted");
  }
  // == plan/step_timeline.h
  {
    SimResult r = simulate(*program, *costs);  // (adapted)
    StepTimeline t{r.ops, r.memory};
    for (const TimelineOp& op : t.ops) std::cout << op.name << " " << op.end - op.start << "\n";
    t.memory.back().bytes;
    t.memory.back().of(MemoryClass::kFeatureMaps);
  }
  // == plan/policy.h
  {
    Policy p = parse_policy("all");
    SyncMode s = parse_sync_mode("layer");
    Prefetch f = parse_prefetch("ahead");
  }
  // == plan/network_costs.h
  {
    NetworkCosts costs;  // (adapted)
    AlgoChoice fast = costs.fastest(), lean = costs.leanest();
    ChosenCosts model(costs, fast);
    SimResult r = simulate(*program, model);  // (adapted)
  }
  // == plan/batch_efficiency.h
  {
    DeviceProfile gpu = load_device_profile("titan-x-maxwell");
    double e = efficiency_at(gpu.batch_efficiency, 0.6, /*outputs per sample=*/512 * 14 * 14, 16);
    (void)e;  // (adapted)
  }
  // == plan/conv_algorithms.h
  {
    const ConvLayer& conv_layer = *given.conv_layer;  // (adapted)
    ConvProblem p = ConvProblem::of(conv_layer, in_shape, out_shape, /*batch=*/64);
    for (const ConvAlgoEstimate& a : conv_algorithms(p))
      std::cout << a.name << " " << a.flops << " " << a.workspace_bytes << "\n";
  }
  // == runtime/checkpoint.h
  {
    Net& net = *given.net;  // (adapted)
    save_checkpoint("run.safetensors", net, config, {.step = 500, .steps_per_epoch = 468,
                                                     .total_steps = 4680});
    Checkpoint c = read_checkpoint("run.safetensors");
    check_resumable(c, net.graph().name(), net.batch(), config.seed);
    restore_checkpoint(c, net);
    load_weights(read_weights_file("w.safetensors"), net);
  }
  // == runtime/sgd.h
  {
    Net& net = *given.net;  // (adapted)
    Sgd sgd({.momentum = 0.9, .weight_decay = 5e-4});
    LrSchedule schedule{.base = 0.05, .kind = LrSchedule::kCosine, .total_steps = 4690,
                        .warmup_steps = 100, .min_lr = 0.005};
    net.run_on_compute([&] { sgd.step(net.backend(), net.params(), schedule.at(step, epoch)); });
  }
  // == runtime/optimizer.h
  {
    Net& net = *given.net;  // (adapted)
    std::unique_ptr<Optimizer> opt = make_optimizer({.kind = OptimizerKind::kAdamW, .weight_decay = 0.01});
    net.run_on_compute([&] {
      const float norm = global_grad_norm(net.backend(), net.params());
      opt->step(net.backend(), net.params(), 1e-3, clip_scale(1.0, norm));
    });
  }
  // == runtime/adamw.h
  {
    Net& net = *given.net;  // (adapted)
    AdamW adamw({.kind = OptimizerKind::kAdamW, .weight_decay = 0.01, .decay_on = WeightDecayOn::kAll});
    net.run_on_compute([&] { adamw.step(net.backend(), net.params(), 1e-3); });
    adamw.steps();
  }
  // == plan/optimizer_state.h
  {
    OptimizerKind o = parse_optimizer("adamw");
    for (const std::string& s : optimizer_state_suffixes(o)) { /* ":exp_avg", ":exp_avg_sq" */ }
    size_t state = optimizer_state_buffers(o) * size_t{4096};
    (void)state;  // (adapted)
  }
  // == backend_api/adamw_step.h
  {
    Backend& backend = *given.backend_;  // (adapted)
    float *weights = nullptr, *grads = nullptr, *exp_avg = nullptr, *exp_avg_sq = nullptr;  // (adapted)
    int64_t count = 0;  // (adapted)
    AdamwStep s{.decay = 1 - 1e-3f * 0.01f, .neg_step_size = -1e-3f / 0.1f, .bias_correction2_sqrt = 0.0316f};
    backend.adamw_update({weights, grads, exp_avg, exp_avg_sq, count, s});
  }
  // == backend_api/host_update.h
  {
    size_t n = 8;  // (adapted)
    std::vector<float> w(n), g(n), m(n), v(n);
    AdamwStep s{.decay = 1 - 1e-3f * 0.01f, .neg_step_size = -1e-3f / 0.1f, .bias_correction2_sqrt = 0.0316f};
    vdnn::host_adamw_update_all({{w.data(), g.data(), m.data(), v.data(), static_cast<int64_t>(n), s}});
  }
  // == runtime/host_optimizer_step.h
  {
    Net& net = *given.net;  // (adapted)
    std::unique_ptr<Optimizer> owned = make_optimizer({.kind = OptimizerKind::kAdamW});  // (adapted)
    Optimizer& optimizer = *owned;  // (adapted)
    double lr = 1e-3;  // (adapted)
    float grad_scale = 1.0f;  // (adapted)
    optimizer.begin_step(lr, grad_scale);
    vdnn::host_optimizer_step(net, optimizer);
  }
  // == planning/state_placement.h
  {
    const Graph& graph = *given.graph;  // (adapted)
    StatePlacement p =
        choose_state_placement(graph, 8, {.device = "rtx-4090"}, {.optimizer = OptimizerKind::kAdamW}, "auto");
    p.place;
    p.summary;
  }
  // == runtime/net_settings.h
  {
    NetSettings s{.batch = 32, .policy = "dyn", .device_memory = 48 << 20, .precision = "bf16"};
    NetOptions o = net_options(s, OptionNames{OptionNames::kKeywords});
    bool plan_first = is_planned(s.policy);
    (void)o, (void)plan_first;  // (adapted)
  }
  // == runtime/step_recorder.h
  {
    Net& net = *given.net;                                       // (adapted)
    const Dataset &train = *given.train_set, &test = *given.test_set;  // (adapted)
    StepRecorder rec;
    net.record_step(3, &rec);
    given.trainer->run(train, &test);  // (adapted)
    write_chrome_trace("step.json", rec.timeline(), "fmnist_cnn measured");
  }
  // == backend_api/kernel_args.h
  {
    Backend& backend = *given.backend_;  // (adapted)
    KernelArgs a;
    a.in = {x}; a.out = y; a.params = {w, b}; a.scratch = workspace;
    backend.forward(node, a);
  }
  // == device/cpu_device.h
  {
    vdnn::CpuDevice dev(vdnn::parse_link("12.8", "10us"));
    dev.launch(vdnn::StreamKind::kCompute, [&] { fill(buf); });
    dev.wait(vdnn::StreamKind::kD2H, dev.record(vdnn::StreamKind::kCompute));
    vdnn::Event saved = dev.copy_async(vdnn::StreamKind::kD2H, host, buf, bytes);
    saved.synchronize();
    double s = dev.stats(vdnn::StreamKind::kD2H).busy_seconds;
  }
}

}  // namespace vdnn
