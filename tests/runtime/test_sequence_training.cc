// A tiny GPT-style token model from a JSON string trains through Net (tokens in, a label per token)
// with bit-identical weights under every offload policy; the token input's and the graph's checks;
// `vdnn plan --device <gpu>` sizes it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>

#include "backends/backend_targets.h"
#include "data/synthetic.h"
#include "error_of.h"
#include "io/model_file.h"
#include "plan/planner.h"
#include "planning/plan_source.h"
#include "runtime/checkpoint.h"
#include "runtime/gradient_check.h"
#include "runtime/net.h"
#include "runtime/trainer.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_sequence_training {

constexpr int64_t kT = 8, kVocab = 16, kBatch = 4;

// embedding -> position_embedding -> layer_norm -> linear -> gelu -> linear -> add (residual)
// -> layer_norm -> linear(V) -> token_cross_entropy, with a dropout on the residual branch.
const char* kTinyLm = R"({
  "name": "tiny_lm", "input": [8], "input_type": "tokens", "classes": 16,
  "layers": [
    {"name": "wte", "type": "embedding", "vocab": 16, "dim": 12},
    {"name": "wpe", "type": "position_embedding", "max_positions": 10},
    {"name": "ln1", "type": "layer_norm"},
    {"name": "fc1", "type": "linear", "units": 24},
    {"name": "act", "type": "gelu", "approximate": "tanh"},
    {"name": "fc2", "type": "linear", "units": 12},
    {"name": "drop", "type": "dropout", "rate": 0.1},
    {"name": "res", "type": "add", "inputs": ["drop", "wpe"]},
    {"name": "ln_f", "type": "layer_norm"},
    {"name": "head", "type": "linear", "units": 16, "bias": false},
    {"name": "loss", "type": "token_cross_entropy"}]})";

Graph tiny_lm() { return parse_model_text(kTinyLm, "tiny_lm.json"); }

// Batch `step`: token ids as floats, each sample's labels its next tokens (a repeating pattern plus
// noise, so the loss can fall), the last label of sample 0 ignored.
struct TokenBatch {
  std::vector<float> tokens;
  std::vector<int32_t> labels;
};

TokenBatch token_batch(int64_t step) {
  TokenBatch b;
  Rng rng(99, static_cast<uint64_t>(step));
  for (int64_t n = 0; n < kBatch; ++n) {
    std::vector<int32_t> seq;
    int32_t id = static_cast<int32_t>(rng.uniform() * kVocab) % kVocab;
    for (int64_t t = 0; t <= kT; ++t, id = (id * 5 + 3) % kVocab) seq.push_back(id);
    for (int64_t t = 0; t < kT; ++t) {
      b.tokens.push_back(static_cast<float>(seq[t]));
      b.labels.push_back(n == 0 && t == kT - 1 ? -100 : seq[t + 1]);
    }
  }
  return b;
}

struct Trained {
  std::string hash;
  std::vector<float> losses;
};

// `steps` steps of `g` (batches 0, 1, 0, 1, ...) under `policy` and `sync`: the losses and the weights.
Trained train_graph(Graph g, Policy policy, SyncMode sync, int steps, uint64_t seed) {
  NetOptions o;
  o.batch = kBatch;
  o.seed = seed;
  o.policy = policy;
  o.sync = sync;
  Net net(std::move(g), o);
  TrainConfig cfg;
  cfg.lr = 0.1;
  cfg.seed = seed;
  Trainer trainer(net, cfg);
  Trained t;
  for (int s = 0; s < steps; ++s) {
    const TokenBatch b = token_batch(s % 2);
    t.losses.push_back(trainer.train_batch(b.tokens.data(), b.labels.data(), kBatch, cfg.lr, s));
  }
  t.hash = net.weights_sha256();
  return t;
}

Trained train(Policy policy) { return train_graph(tiny_lm(), policy, SyncMode::kEvent, 6, 3); }

TEST(SequenceTraining, TinyTokenModelTrainsWithBitIdenticalWeightsUnderEveryPolicy) {
  const Trained none = train(Policy::kNone);
  ASSERT_EQ(none.losses.size(), 6u);
  // Near log V: logits of std about 1 (a LeCun-initialized head over layer-normed features) add
  // about half their variance to it.
  EXPECT_NEAR(none.losses[0], std::log(static_cast<double>(kVocab)) + 0.5, 1.0);
  for (float l : none.losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(none.losses[4], none.losses[0]) << "the same batch again: the loss fell";
  for (Policy policy : {Policy::kConv, Policy::kAll}) {
    const Trained other = train(policy);
    EXPECT_EQ(other.hash, none.hash) << to_string(policy);
    EXPECT_EQ(other.losses, none.losses) << to_string(policy);
  }
}

// One pre-norm GPT block (models/generate_gpt.py's, 2 heads) with attention of `implementation`.
std::string tiny_gpt_text(const std::string& implementation) {
  return R"({
  "name": "tiny_gpt", "input": [8], "input_type": "tokens", "classes": 16,
  "layers": [
    {"name": "wte", "type": "embedding", "vocab": 16, "dim": 12},
    {"name": "wpe", "type": "position_embedding", "max_positions": 8},
    {"name": "ln_1", "type": "layer_norm"},
    {"name": "c_attn", "type": "linear", "units": 36},
    {"name": "attn", "type": "attention", "heads": 2, "causal": true, "dropout": 0.1, "implementation": ")" +
         implementation + R"("},
    {"name": "c_proj", "type": "linear", "units": 12},
    {"name": "res1", "type": "add", "inputs": ["wpe", "c_proj"]},
    {"name": "ln_2", "type": "layer_norm"},
    {"name": "c_fc", "type": "linear", "units": 48},
    {"name": "gelu", "type": "gelu"},
    {"name": "mlp_proj", "type": "linear", "units": 12},
    {"name": "res2", "type": "add", "inputs": ["res1", "mlp_proj"]},
    {"name": "ln_f", "type": "layer_norm"},
    {"name": "lm_head", "type": "linear", "units": "classes", "bias": false, "tied_to": "wte"},
    {"name": "loss", "type": "token_cross_entropy"}]})";
}

Trained train_gpt(const std::string& implementation, Policy policy, SyncMode sync) {
  return train_graph(parse_model_text(tiny_gpt_text(implementation), "tiny_gpt.json"), policy, sync, 4, 4);
}

// Attention (both implementations, with dropout on the probabilities) in a whole GPT block: every
// policy and vDNN's layer barrier give none's weights and losses, bit for bit. conv offloads the
// inputs of the matmul-class layers (plan/policy.h is_conv_class): the attention's and the linears'.
TEST(SequenceTraining, AGptBlockWithAttentionTrainsBitIdenticallyUnderEveryPolicy) {
  for (const std::string implementation : {"materialized", "fused"}) {
    const Trained none = train_gpt(implementation, Policy::kNone, SyncMode::kEvent);
    for (float l : none.losses) EXPECT_TRUE(std::isfinite(l)) << implementation;
    EXPECT_LT(none.losses[2], none.losses[0]) << implementation << ": the same batch again, the loss fell";
    for (Policy policy : {Policy::kConv, Policy::kAll})
      for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer}) {
        const Trained other = train_gpt(implementation, policy, sync);
        EXPECT_EQ(other.hash, none.hash) << implementation << " " << to_string(policy) << " " << to_string(sync);
        EXPECT_EQ(other.losses, none.losses) << implementation << " " << to_string(policy);
      }
  }
  Net conv(parse_model_text(tiny_gpt_text("fused"), "tiny_gpt.json"), {.batch = kBatch, .policy = Policy::kConv});
  std::set<std::string> offloaded;
  for (const Step& s : conv.train_program().steps)
    if (s.op == Op::kOffload) offloaded.insert(conv.train_program().tensors[s.tensor].name);
  EXPECT_TRUE(offloaded.count("c_attn:out")) << "the attention's input";
  EXPECT_TRUE(offloaded.count("ln_1:out")) << "c_attn's input";
  EXPECT_TRUE(offloaded.count("gelu:out")) << "mlp_proj's input";
  EXPECT_FALSE(offloaded.count("res2:out")) << "only ln_f (a layer norm) reads it in backward";
}

// A one-block token model at T = 1024 whose attention is `implementation`.
Graph long_sequence_model(const std::string& implementation) {
  return parse_model_text(R"({"name": "long", "input": [1024], "input_type": "tokens", "classes": 16,
  "layers": [
    {"name": "wte", "type": "embedding", "vocab": 16, "dim": 64},
    {"name": "wpe", "type": "position_embedding", "max_positions": 1024},
    {"name": "c_attn", "type": "linear", "units": 192},
    {"name": "attn", "type": "attention", "heads": 4, "implementation": ")" +
                              implementation + R"("},
    {"name": "head", "type": "linear", "units": "classes"},
    {"name": "loss", "type": "token_cross_entropy"}]})",
                          "long.json");
}

// The bytes of the Program tensor named `name` ("attn:saved0"), 0 if none.
size_t tensor_bytes(const Program& p, const std::string& name) {
  for (const auto& t : p.tensors)
    if (t.name == name) return t.bytes;
  return 0;
}

// At T = 1024 the fused attention never stores the B·H·T² scores: the planner counts the
// materialized kernel's saved probabilities at exactly that size and the fused kernel's log-sum-exp
// at B·H·T, and the smallest budget of a training step drops by about two scores' bytes. The
// fused model trains at its own smallest budget, where the materialized one is refused.
TEST(SequenceTraining, FusedAttentionNeedsLessMemoryByTheScoresAtALongSequence) {
  constexpr size_t kB = 1, kH = 4, kLong = 1024, kFloat = 4;
  const Net materialized(long_sequence_model("materialized"), {.batch = kB});
  const Net fused(long_sequence_model("fused"), {.batch = kB});
  EXPECT_EQ(tensor_bytes(materialized.train_program(), "attn:saved0"), kB * kH * kLong * kLong * kFloat);
  EXPECT_EQ(tensor_bytes(fused.train_program(), "attn:saved0"), kB * kH * kLong * kFloat);
  const size_t m = materialized.train_plan().smallest_bytes, f = fused.train_plan().smallest_bytes;
  std::printf("T = 1024, 4 heads, batch 1: smallest budget materialized %zu B, fused %zu B (%.2f scores)\n", m, f,
              static_cast<double>(m - f) / static_cast<double>(kB * kH * kLong * kLong * kFloat));
  // The materialized backward holds two scores-size tensors at once (the saved probabilities and
  // its dP scratch), the fused kernel neither; its own tiles and log-sum-exp take back about 2%.
  // Measured here: 1.98 scores (36,617,216 B against 3,390,976 B).
  EXPECT_GE(10 * (m - f), 19 * kB * kH * kLong * kLong * kFloat);
  NetOptions at_fused{.batch = kB};
  at_fused.device_memory = f;
  Net trains(long_sequence_model("fused"), at_fused);
  std::vector<float> tokens(kLong);
  std::vector<int32_t> labels(kLong);
  for (size_t t = 0; t < kLong; ++t)
    tokens[t] = static_cast<float>(t % 16), labels[t] = static_cast<int32_t>((t + 1) % 16);
  trains.set_batch(tokens.data(), labels.data(), 1);
  EXPECT_TRUE(std::isfinite(trains.forward(true)));
  trains.backward();
  EXPECT_THROW(Net(long_sequence_model("materialized"), at_fused), Error);
}

// lm_head tied to the token embedding (GPT-2's): one [V, C] weight, stored and counted once, its
// gradient the sum of both uses, checked against finite differences of the whole network.
TEST(SequenceTraining, ATiedHeadSharesTheEmbeddingsWeightAndSumsBothGradients) {
  const Graph tied = parse_model_text(tiny_gpt_text("materialized"), "tiny_gpt.json");
  std::string untied_text = tiny_gpt_text("materialized");
  untied_text.erase(untied_text.find(R"(, "tied_to": "wte")"), std::string(R"(, "tied_to": "wte")").size());
  const Graph untied = parse_model_text(untied_text, "untied.json");
  EXPECT_EQ(untied.parameter_count() - tied.parameter_count(), 16 * 12);  // lm_head's [V, C], once
  Net net(parse_model_text(tiny_gpt_text("materialized"), "tiny_gpt.json"), {.batch = kBatch});
  int weights = 0;
  for (const auto& t : net.train_program().tensors) weights += t.name == "wte.weight" || t.name == "lm_head.weight";
  EXPECT_EQ(weights, 1) << "one weight tensor for both layers";
  // Without the attention's dropout: the check evaluates the loss at many steps, each with its own mask.
  std::string no_dropout = tiny_gpt_text("fused");
  no_dropout.replace(no_dropout.find(R"("dropout": 0.1)"), std::string(R"("dropout": 0.1)").size(), R"("dropout": 0)");
  test::expect_gradients_match_finite_differences(parse_model_text(no_dropout, "tiny_gpt.json"),
                                                  {.batch = 2, .seed = 5});
  test::expect_error(
      [] {
        parse_model_text(R"({"input": [4], "input_type": "tokens", "classes": 8, "layers": [
      {"name": "wte", "type": "embedding", "vocab": 8, "dim": 4},
      {"name": "head", "type": "linear", "units": 8, "tied_to": "nowhere"},
      {"name": "loss", "type": "token_cross_entropy"}]})",
                         "bad.json");
      },
      {"bad.json: layer 'head'", "tied_to", "no earlier layer named 'nowhere'"});
}

// PyTorch's state_dict of a tied model holds the shared weight under both names, so
// load_state_dict(strict=True) wants "lm_head.weight" too: vdnn writes the copy, and reading checks it.
TEST(SequenceTraining, ATiedModelsStateDictHoldsTheSharedWeightUnderBothNamesAndLoadingChecksThem) {
  Net net(parse_model_text(tiny_gpt_text("fused"), "tiny_gpt.json"), {.batch = kBatch, .seed = 3});
  EXPECT_EQ(tied_parameter_names(net.graph()),
            (std::vector<std::pair<std::string, std::string>>{{"lm_head.weight", "wte.weight"}}));
  SafeTensors file = state_dict(net, 0);
  file.path = "tied.safetensors";
  ASSERT_NE(file.find("lm_head.weight"), nullptr);
  EXPECT_EQ(file.find("lm_head.weight")->data, file.find("wte.weight")->data);
  EXPECT_EQ(file.find("lm_head.weight")->shape, (std::vector<int64_t>{kVocab, 12}));
  Net other(parse_model_text(tiny_gpt_text("fused"), "tiny_gpt.json"), {.batch = kBatch, .seed = 4});
  load_weights(file, other, 0);
  EXPECT_EQ(other.weights_sha256(), net.weights_sha256());
  for (SafeTensor& t : file.tensors)
    if (t.name == "lm_head.weight") t.data[5] += 1.0f;  // as an untied model's head would be
  test::expect_error([&] { load_weights(file, other, 0); },
                     {"tied.safetensors: 'lm_head.weight' differs from 'wte.weight'", "tied_to"});
}

// Every parameter's gradient through the whole token network (embedding, position embedding,
// layer norms, linears, GELU, dropout, residual add, token loss) against finite differences.
TEST(SequenceTraining, WholeNetworkGradientsMatchFiniteDifferences) {
  test::expect_gradients_match_finite_differences(tiny_lm(), {.batch = 2, .seed = 5});
}

TEST(SequenceTraining, OffloadsWhatTheSequenceLayersBackwardReadsUnderAll) {
  Net net(tiny_lm(), {.batch = kBatch, .policy = Policy::kAll});
  int offloads = 0;
  for (const Step& s : net.train_program().steps) offloads += s.op == Op::kOffload;
  EXPECT_GT(offloads, 0);
}

TEST(SequenceTraining, LabelsPerTokenReachTheLossAndTheAccuracy) {
  const Graph g = tiny_lm();
  EXPECT_TRUE(g.token_input());
  EXPECT_EQ(g.labels_per_sample(), kT);
  Net net(tiny_lm(), {.batch = kBatch});
  const TokenBatch b = token_batch(0);
  net.set_batch(b.tokens.data(), b.labels.data(), 2);  // two valid samples: 16 labels
  const float loss = net.forward(false);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(net.logits().size(), static_cast<size_t>(2 * kT * kVocab));
  EXPECT_LE(net.correct(), 2 * kT);
}

// The forward of a fresh Net over batch 0 changed by `edit`.
void forward_with(const std::function<void(TokenBatch&)>& edit) {
  Net net(tiny_lm(), {.batch = kBatch});
  TokenBatch b = token_batch(0);
  edit(b);
  net.set_batch(b.tokens.data(), b.labels.data(), kBatch);
  net.forward(true);
}

TEST(SequenceTraining, BadTokensAndLabelsInABatchAreClearErrors) {
  test::expect_error([] { forward_with([](TokenBatch& b) { b.tokens[kT + 3] = 16; }); },  // the vocabulary is 16
                     {"layer 'wte' (embedding)", "token id 16 at sample 1, position 3", "[0, 16)"});
  test::expect_error([] { forward_with([](TokenBatch& b) { b.tokens[2] = 2.5f; }); },
                     {"token input", "sample 0 position 2", "2.5", "not a whole-number token id"});
  test::expect_error([] { forward_with([](TokenBatch& b) { b.labels[5] = 16; }); },
                     {"layer 'loss' (token_cross_entropy)", "label 16 at sample 0, position 5", "[0, 16)"});
}

TEST(SequenceTraining, DataWithOneLabelPerSampleIsRefusedBeforeTheLossReadsPastIt) {
  Net net(tiny_lm(), {.batch = kBatch});
  const Dataset data = make_synthetic(8, kT, 1, 1, kVocab, 1);
  TrainConfig cfg;
  cfg.iterations = 1;
  cfg.evaluate = false;
  test::expect_error([&] { Trainer(net, cfg).run(data, nullptr); },
                     {"has 1 label(s) per sample", "model 'tiny_lm' reads 8 (one per token"});
}

TEST(SequenceGraph, TheTokenInputIsReadOnlyByAnEmbeddingAndOnlyTokensFeedOne) {
  ModelBuilder no_embedding("lm", {8}, 16);
  no_embedding.tokens().layer("linear", "head", {{"units", 16}}).layer("token_cross_entropy", "loss");
  test::expect_error([&] { no_embedding.build(); }, {"layer 'head' (linear)", "token input", "embedding"});
  ModelBuilder float_input("lm", {8}, 16);
  float_input.layer("embedding", "wte", {{"vocab", 16}, {"dim", 4}});
  test::expect_error([&] { float_input.build(); }, {"layer 'wte' (embedding)", "input_type", "tokens"});
  test::expect_error([] { Graph("lm", Shape{3, 4, 4}, 16, InputType::kTokens); }, {"token input must be [T]"});
  ModelBuilder wrong_vocab("lm", {8}, 10);
  wrong_vocab.tokens()
      .layer("embedding", "wte", {{"vocab", 16}, {"dim", 4}})
      .layer("linear", "head", {{"units", 16}})
      .layer("token_cross_entropy", "loss");
  test::expect_error([&] { wrong_vocab.build(); }, {"16 logits per token", "10 classes"});
  test::expect_error(
      [] { parse_model_text(R"({"input": [8], "input_type": "ids", "classes": 2, "layers": []})", "m"); },
      {"input_type", "\"tokens\""});
}

TEST(SequenceGraph, PositionsBeyondTheTableAreRefusedWhenTheModelLoads) {
  std::string text = kTinyLm;
  text.replace(text.find("\"max_positions\": 10"), 19, "\"max_positions\": 6");
  test::expect_error([&] { parse_model_text(text, "tiny_lm.json"); },
                     {"tiny_lm.json", "layer 'wpe' (position_embedding)", "8 positions but max_positions is 6"});
}

// `vdnn plan`'s inputs on this CPU: every kernel profiled (token ids 0, a label per token), then a
// few training steps and forward passes on token batches calibrate them.
TEST(SequenceGraph, ThisCpusPlanProfilesAndCalibratesOnTokenBatches) {
  for (bool inference : {false, true}) {
    const PlanInputs in =
        plan_inputs(tiny_lm(), kBatch, {.repeats = 1, .calibrate_with = tiny_lm, .calibrate_inference = inference});
    ASSERT_EQ(in.costs.nodes.size(), tiny_lm().nodes().size());
    EXPECT_TRUE(std::isfinite(in.costs.kernel_scale) && in.costs.kernel_scale > 0) << "inference " << inference;
    EXPECT_NE(in.costs.kernel_scale, 1.0) << "calibrated: measured over simulated, never exactly 1";
  }
}

// `vdnn plan --device h100`'s inputs: the CUDA kernels' sizes for every sequence layer.
TEST(SequenceGraph, GpuProfilePlansSizeEverySequenceLayer) {
  const Graph g = tiny_lm();
  const int64_t n = 4;
  const PlanInputs in = plan_inputs(g, n, {.device = "h100"});
  ASSERT_EQ(in.facts.size(), g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& node = g.nodes()[i];
    const std::string& type = node.layer->type();
    const size_t out = static_cast<size_t>(n * g.value(node.output).shape.elements()) * 4;
    EXPECT_EQ(in.facts[i].out_bytes, type == "token_cross_entropy" ? 4 : out) << node.layer->name();
    if (type == "layer_norm") EXPECT_EQ(in.facts[i].saved_bytes, (std::vector<size_t>{n * kT * 4, n * kT * 4}));
    if (type == "token_cross_entropy") EXPECT_EQ(in.facts[i].scratch_bytes, static_cast<size_t>(n * kT * 4));
  }
  EXPECT_EQ(in.facts[0].param_bytes, (std::vector<size_t>{16 * 12 * 4}));
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const Evaluation e = planner.evaluate({Policy::kAll, in.costs.fastest()}, size_t{1} << 30);
  EXPECT_GT(e.time.iteration_seconds, 0);
}

}  // namespace test_sequence_training
}  // namespace vdnn
