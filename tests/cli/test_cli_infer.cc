// `vdnn infer` on a Net that only infers and `vdnn plan --inference` (issue 20), end to end: the
// peak by class and the smallest budget are printed, that budget runs and one byte less is refused
// naming it, the inference rewrites leave the answer as it was, --top-k agrees with the logits,
// --repeat times a batch, and the plan lists every device and batch asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "io/npy.h"

namespace test_cli_infer {

namespace fs = std::filesystem;

using vdnn::parse_json_text;
using vdnn::test::CliRun;
using vdnn::test::expect_user_error;
using vdnn::test::read_json_file;
using vdnn::test::temp_dir;
using vdnn::test::vdnn;

// The JSON of a command that profiles first: the profiler may warn of unstable timings on stderr
// (a busy machine), a line before the JSON.
nlohmann::json json_after_warnings(const std::string& output, const std::string& what) {
  const size_t line = output.starts_with("{") ? 0 : output.find("\n{");
  return parse_json_text(line == std::string::npos ? output : output.substr(line == 0 ? 0 : line + 1), what);
}

const std::string kInfer = "infer --model fmnist_cnn --data synthetic --synthetic-samples 256 --batch 32 ";

class CliInfer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("infer");
    const CliRun t = vdnn(
        "train --data synthetic --synthetic-samples 256 --batch 32 --progress none --iterations 6 "
        "--save " +
        path("w.safetensors"));
    ASSERT_EQ(t.exit_code, 0) << t.output;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  nlohmann::json infer_json(const std::string& flags) const {
    const CliRun r = vdnn(kInfer + "--json --weights " + path("w.safetensors") + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0 ? parse_json_text(r.output, "vdnn infer --json") : nlohmann::json::object();
  }
  fs::path dir_;
};

TEST_F(CliInfer, TheSmallestBudgetRunsAndOneByteLessIsRefusedNamingIt) {
  const nlohmann::json j = infer_json("");
  const nlohmann::json& by_class = j["peak_by_class"];
  EXPECT_GT(by_class["weights"].get<size_t>(), 0u);
  EXPECT_GT(by_class["activations"].get<size_t>(), 0u);
  EXPECT_LE(j["peak_bytes"].get<size_t>(), j["smallest_budget_bytes"].get<size_t>());
  EXPECT_LE(j["peak_bytes"].get<size_t>(), by_class["weights"].get<size_t>() + by_class["activations"].get<size_t>() +
                                               by_class["workspace"].get<size_t>());
  EXPECT_TRUE(j["direct_convolutions"].empty());  // no budget: the fastest kernels
  // A budget far too small is refused naming the smallest that works (every convolution that could
  // go direct to save workspace has); that one runs, one byte less is refused.
  const std::string weights = " --weights " + path("w.safetensors");
  const CliRun tiny = vdnn(kInfer + weights + " --device-memory 1MiB");
  ASSERT_EQ(tiny.exit_code, 1) << tiny.output;
  const size_t at = tiny.output.find("it needs at least ");
  ASSERT_NE(at, std::string::npos) << tiny.output;
  const size_t open = tiny.output.find('(', at), close = tiny.output.find(" bytes)", at);
  const size_t smallest = std::stoull(tiny.output.substr(open + 1, close - open - 1));
  const nlohmann::json fits = infer_json("--device-memory " + std::to_string(smallest) + "B");
  EXPECT_EQ(fits["arena_bytes"].get<size_t>(), smallest);
  EXPECT_EQ(fits["test_accuracy"], j["test_accuracy"]);
  const CliRun small = vdnn(kInfer + weights + " --device-memory " + std::to_string(smallest - 1) + "B");
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("(" + std::to_string(smallest) + " bytes)"), std::string::npos) << small.output;
  // The text output says the same.
  const CliRun text = vdnn(kInfer + weights);
  EXPECT_NE(text.output.find("smallest budget"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("(" + std::to_string(j["smallest_budget_bytes"].get<size_t>()) + " bytes)"),
            std::string::npos)
      << text.output;
}

TEST_F(CliInfer, BelowItsWeightsTheyAreStreamedFromHostMemoryAndTheAnswerStays) {
  // Batch 2: the weights (fc1's 3.1 MiB of fmnist_cnn's 3.3) are most of the pass.
  const std::string run =
      "infer --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 2 --json --weights " +
      path("w.safetensors") + " ";
  const CliRun resident = vdnn(run + "--logits " + path("resident.npy"));
  ASSERT_EQ(resident.exit_code, 0) << resident.output;
  const nlohmann::json r = parse_json_text(resident.output, "vdnn infer --json");
  EXPECT_TRUE(r["streamed_layers"].empty());
  EXPECT_EQ(r["streamed_bytes_per_batch"], 0);
  const size_t weights = r["peak_by_class"]["weights"].get<size_t>();
  const size_t half = weights / 2;
  const CliRun streamed =
      vdnn(run + "--logits " + path("streamed.npy") + " --device-memory " + std::to_string(half) + "B");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
  const nlohmann::json s = parse_json_text(streamed.output, "vdnn infer --json");
  EXPECT_LE(s["arena_bytes"].get<size_t>(), half);
  EXPECT_LT(s["peak_by_class"]["weights"].get<size_t>(), half);
  // fc1 holds more than an eighth of the weights: cut into blocks, which are streamed.
  EXPECT_EQ(s["fc_split"]["layers_split"], 1);
  EXPECT_GE(s["fc_split"]["blocks"].get<int>(), 8);
  EXPECT_GE(s["streamed_layers"].size(), 4u);  // as many blocks as the budget needs, not all
  EXPECT_GE(s["streamed_bytes_per_batch"].get<size_t>(), weights / 2);
  EXPECT_EQ(s["test_accuracy"], r["test_accuracy"]);
  const vdnn::NpyArray a = vdnn::read_npy(path("resident.npy")), b = vdnn::read_npy(path("streamed.npy"));
  ASSERT_EQ(a.data.size(), b.data.size());
  float diff = 0;
  for (size_t i = 0; i < a.data.size(); ++i) diff = std::max(diff, std::abs(a.data[i] - b.data[i]));
  EXPECT_LE(diff, 1e-5f) << "the same weights, cut into blocks and read from another place";
  // Its smallest with every weight streamed runs; one byte less is refused naming it.
  const size_t smallest = s["smallest_streamed_budget_bytes"].get<size_t>();
  EXPECT_EQ(vdnn(run + "--logits " + path("x.npy") + " --device-memory " + std::to_string(smallest) + "B").exit_code,
            0);
  const CliRun below =
      vdnn(run + "--logits " + path("x.npy") + " --device-memory " + std::to_string(smallest - 1) + "B");
  EXPECT_EQ(below.exit_code, 1) << below.output;
  EXPECT_NE(below.output.find("(" + std::to_string(smallest) + " bytes)"), std::string::npos) << below.output;
  EXPECT_NE(below.output.find("every weight streamed from host memory"), std::string::npos) << below.output;
  // The streamed weights' host copies are at least what is streamed; a host budget below them is refused.
  const size_t host = s["host_bytes"].get<size_t>();
  EXPECT_GE(host, s["streamed_bytes_per_batch"].get<size_t>());
  const std::string at_half = run + "--logits " + path("x.npy") + " --device-memory " + std::to_string(half) + "B";
  const CliRun host_short = vdnn(at_half + " --host-memory " + std::to_string(host - 1) + "B");
  EXPECT_EQ(host_short.exit_code, 1) << host_short.output;
  EXPECT_NE(host_short.output.find("(" + std::to_string(host) + " bytes), the smallest --host-memory that works"),
            std::string::npos)
      << host_short.output;
  EXPECT_EQ(vdnn(at_half + " --host-memory " + std::to_string(host) + "B").exit_code, 0);
  // --stream-weights never: every weight stays on the device, so half of them is refused.
  const CliRun never =
      vdnn(run + "--logits " + path("x.npy") + " --stream-weights never --device-memory " + std::to_string(half) + "B");
  EXPECT_EQ(never.exit_code, 1) << never.output;
  EXPECT_NE(never.output.find("streaming them from host memory is off"), std::string::npos) << never.output;
  // The text output names what is streamed and how fc1 was cut.
  const CliRun text = vdnn("infer --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 2 --weights " +
                           path("w.safetensors") + " --device-memory " + std::to_string(half) + "B");
  EXPECT_NE(text.output.find("weights streamed from host memory"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("fc 'fc1'"), std::string::npos) << text.output;
}

TEST_F(CliInfer, TheFastestMeasuredAlgorithmsGiveTheAnswerAndThePlanPredictsTheStreamedPass) {
  // --conv-algo fastest: per layer the fastest forward kernel the profiler measures on this CPU.
  const nlohmann::json a = infer_json("");
  const CliRun fastest = vdnn(kInfer + "--json --weights " + path("w.safetensors") + " --conv-algo fastest");
  ASSERT_EQ(fastest.exit_code, 0) << fastest.output;
  const nlohmann::json f = json_after_warnings(fastest.output, "vdnn infer --conv-algo fastest --json");
  // Other kernels, other rounding: at most one of the 256 samples may flip at a near tie.
  EXPECT_NEAR(f["test_accuracy"].get<double>(), a["test_accuracy"].get<double>(), 1.0 / 256 + 1e-9);
  EXPECT_NEAR(f["test_loss"].get<double>(), a["test_loss"].get<double>(), 1e-4);
  EXPECT_TRUE(f["direct_convolutions"].empty()) << "direct by choice is not direct to fit a budget";
  // --algo-cache: measured once and written, then read (the same answer), refused for another batch.
  const std::string cache = path("algos.json");
  const std::string cached =
      kInfer + "--json --weights " + path("w.safetensors") + " --conv-algo fastest --algo-cache " + cache;
  const CliRun first = vdnn(cached);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const nlohmann::json c = vdnn::test::read_json_file(cache);
  EXPECT_EQ(c["model"], "fmnist_cnn");
  EXPECT_EQ(c["batch"], 32);
  EXPECT_EQ(c["algorithms"].size(), 2u);  // conv1 and conv2
  const CliRun again = vdnn(cached);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  // The same algorithms as the run that measured them (another measurement may pick others: the
  // loss would differ in float noise), so the same loss to the bit.
  EXPECT_EQ(parse_json_text(again.output, "vdnn infer --algo-cache")["test_loss"],
            json_after_warnings(first.output, "vdnn infer --algo-cache, measuring")["test_loss"]);
  expect_user_error("infer --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 8 --weights " +
                        path("w.safetensors") + " --conv-algo fastest --algo-cache " + cache,
                    "was measured for model 'fmnist_cnn' at batch 32, not 'fmnist_cnn' at batch 8");
  expect_user_error(kInfer + "--weights " + path("w.safetensors") + " --algo-cache " + cache,
                    "--algo-cache applies only with --conv-algo fastest");
  const std::string bad = path("bad_algos.json");
  const std::string with_bad =
      kInfer + "--weights " + path("w.safetensors") + " --conv-algo fastest --algo-cache " + bad;
  for (const auto& [text, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "not an algorithm cache"},
           {R"({"model": "fmnist_cnn", "batch": 32, "algorithms": {"conv1": "direct"}})",
            "no algorithm for convolution 'conv2'"},
           {R"({"model": "fmnist_cnn", "batch": 32, "algorithms": {"conv1": "fft", "conv2": "auto"}})",
            "algorithm 'fft'"}}) {
    std::ofstream(bad) << text;
    expect_user_error(with_bad, fragment);
  }
  // The plan on this CPU's measured costs: in half the weights, fc1 in blocks, the largest streamed.
  const size_t half = a["peak_by_class"]["weights"].get<size_t>() / 2;
  const CliRun plan = vdnn("plan --inference --model fmnist_cnn --device cpu --batches 2 --json --device-memory " +
                           std::to_string(half) + "B");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const nlohmann::json row = json_after_warnings(plan.output, "vdnn plan --inference --json")["rows"][0];
  EXPECT_TRUE(row["fits"].get<bool>());
  EXPECT_GT(row["streamed_bytes_per_batch"].get<size_t>(), half / 2);
  EXPECT_GT(row["latency_seconds"].get<double>(), 0.0);
}

TEST_F(CliInfer, FoldingBatchNormAndRemovingDropoutLeaveTheAnswer) {
  const nlohmann::json rewritten = infer_json(""), kept = infer_json("--keep-graph");
  EXPECT_EQ(rewritten["rewrites"]["batch_norms_folded"], 2);  // fmnist_cnn: two conv + batch norm pairs
  EXPECT_EQ(rewritten["rewrites"]["dropouts_removed"], 1);
  EXPECT_EQ(kept["rewrites"]["batch_norms_folded"], 0);
  EXPECT_EQ(rewritten["test_accuracy"], kept["test_accuracy"]);
  EXPECT_NEAR(rewritten["test_loss"].get<double>(), kept["test_loss"].get<double>(),
              1e-5 * kept["test_loss"].get<double>());
  EXPECT_EQ(rewritten["weights_sha256"], kept["weights_sha256"]);  // the file's weights, as given
  // The folded graph holds fewer activations (no batch norm outputs).
  EXPECT_LT(rewritten["peak_by_class"]["activations"].get<size_t>(),
            kept["peak_by_class"]["activations"].get<size_t>());
}

TEST_F(CliInfer, TopKAgreesWithTheLogitsAndRepeatTimesABatch) {
  const nlohmann::json j =
      infer_json("--top-k 3 --predictions " + path("top.json") + " --logits " + path("l.npy") + " --repeat 3");
  EXPECT_GT(j["batch_seconds_median"].get<double>(), 0.0);
  const nlohmann::json top = read_json_file(path("top.json"));
  const vdnn::NpyArray logits = vdnn::read_npy(path("l.npy"));
  ASSERT_EQ(top["k"], 3);
  ASSERT_EQ(top["samples"].size(), static_cast<size_t>(logits.shape[0]));
  const int64_t classes = logits.shape[1];
  for (size_t i = 0; i < top["samples"].size(); ++i) {
    const float* row = logits.data.data() + i * classes;
    const auto& s = top["samples"][i];
    ASSERT_EQ(s["classes"].size(), 3u);
    EXPECT_EQ(s["classes"][0].get<int64_t>(), std::max_element(row, row + classes) - row) << "sample " << i;
    EXPECT_GE(s["probabilities"][0].get<double>(), s["probabilities"][1].get<double>());
    EXPECT_GE(s["probabilities"][1].get<double>(), s["probabilities"][2].get<double>());
    EXPECT_LE(
        s["probabilities"][0].get<double>() + s["probabilities"][1].get<double>() + s["probabilities"][2].get<double>(),
        1.0 + 1e-9);
  }
  expect_user_error(kInfer + "--weights " + path("w.safetensors") + " --top-k 11 --predictions " + path("t2.json"),
                    "--top-k 11 exceeds the 10 classes of model 'fmnist_cnn'");
  expect_user_error(kInfer + "--weights " + path("w.safetensors") + " --top-k 3",
                    "--top-k applies only with --predictions FILE.json");
}

TEST_F(CliInfer, ABatchAboveTheSamplesIsOneBatchOfThemAll) {
  // --batch 100000 on 256 images took a 12 GiB arena; PyTorch's DataLoader gives one smaller batch.
  const nlohmann::json big = infer_json("--batch 100000"), whole = infer_json("--batch 64");  // 64 test samples
  EXPECT_EQ(big["batch"], 64);
  EXPECT_EQ(big["batch_note"].get<std::string>().rfind("--batch 100000 is more than the 64 samples of ", 0), 0u)
      << big["batch_note"];
  EXPECT_EQ(big["arena_bytes"], whole["arena_bytes"]);
  EXPECT_EQ(big["test_loss"], whole["test_loss"]);
  EXPECT_EQ(big["test_accuracy"], whole["test_accuracy"]);
  const CliRun text = vdnn(kInfer + "--weights " + path("w.safetensors") + " --batch 100000");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find(": one batch of 64 holds them all\n"), std::string::npos) << text.output;
}

TEST(CliPlanInference, EveryDeviceAndBatchGetsARowAndAPicture) {
  const fs::path dir = temp_dir("plan-inference");
  const CliRun r = vdnn(
      "plan --model vgg16 --inference --device titan-x-maxwell,jetson-orin-nano --batches 1,8 --json "
      "--svg-memory " +
      (dir / "m.svg").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = parse_json_text(r.output, "vdnn plan --inference --json");
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][0]["device"], "titan-x-maxwell");
  EXPECT_EQ(j["rows"][3]["device"], "jetson-orin-nano");
  EXPECT_EQ(j["rows"][3]["batch"], 8);
  for (const auto& row : j["rows"]) {
    EXPECT_TRUE(row["fits"].get<bool>());
    EXPECT_GT(row["latency_seconds"].get<double>(), 0.0);
    // vgg16's weights (138M parameters, 528 MiB) are the same at every batch; activations grow with it.
    EXPECT_GT(row["peak_by_class"]["weights"].get<size_t>(), size_t{500} << 20);
  }
  EXPECT_GT(j["rows"][1]["peak_by_class"]["activations"].get<size_t>(),
            j["rows"][0]["peak_by_class"]["activations"].get<size_t>());
  // The small GPU is slower on the same batch.
  EXPECT_GT(j["rows"][2]["latency_seconds"].get<double>(), j["rows"][0]["latency_seconds"].get<double>());
  EXPECT_TRUE(fs::file_size(dir / "m.svg") > 0);
  // In half the weights it runs: fc6 cut into blocks, the largest layers' weights streamed over
  // the link, at a cost; far below, the message says how much would do.
  const CliRun half =
      vdnn("plan --model vgg16 --inference --device titan-x-maxwell --batches 1 --json --device-memory 264MiB");
  ASSERT_EQ(half.exit_code, 0) << half.output;
  const nlohmann::json h = parse_json_text(half.output, "vdnn plan --inference --json")["rows"][0];
  EXPECT_TRUE(h["fits"].get<bool>());
  EXPECT_LE(h["peak_bytes"].get<size_t>(), size_t{264} << 20);
  EXPECT_GT(h["streamed_bytes_per_batch"].get<size_t>(), size_t{264} << 20);
  EXPECT_GT(h["latency_seconds"].get<double>(), j["rows"][0]["latency_seconds"].get<double>());
  const CliRun small =
      vdnn("plan --model vgg16 --inference --device titan-x-maxwell --batches 1 --device-memory 64MiB");
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("does not fit 64.00 MiB"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("every weight streamed"), std::string::npos) << small.output;
  expect_user_error("plan --model vgg16 --inference --policy all",
                    "--policy applies only to training plans; it was given with --inference");
  expect_user_error("plan --model vgg16 --inference --batches 1,x", "--batches '1,x': 'x' is not a batch size");
  expect_user_error("plan --model vgg16 --batches 1,8", "--batches applies only with --inference");
  fs::remove_all(dir);
}

}  // namespace test_cli_infer
