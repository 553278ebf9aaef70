// ONNX's own conformance data through the importer and an inference Net: every node and
// pytorch-converted test of Debian's libonnx-testdata (a folder of model.onnx and
// test_data_set_*/input_*.pb, output_*.pb) whose operators the importer translates is imported,
// run on its inputs and compared with its outputs, or refused in one line, and the refusals are
// exactly those tests/interop/onnx_conformance_refused.txt lists with their reasons.
//
// What the harness changes, each what an exporter of a network would have written: a test's inputs
// after the first become initializers (vdnn's networks have one data input and constant weights:
// Conv's W, Gemm's B and C, Clip's bounds, Pad's pads), except a SoftmaxCrossEntropyLoss's labels;
// an output that is not [N, K] gets a Flatten (vdnn's output is the logits, a vector per sample).
// The comparison is onnx.backend.test's: |vdnn - expected| <= atol + rtol * |expected| with
// rtol 1e-3, atol 1e-7; a trailing Softmax's output is the softmax of vdnn's logits
// (ImportedModel::output_is_softmax), a loss's is the mean loss forward() returns.
// A missing package fails the test, naming it (scripts/setup.sh installs it with the test packages).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "interop/onnx_import.h"
#include "interop/onnx_node_reader.h"
#include "runtime/checkpoint.h"
#include "runtime/net.h"
#include "util/text_file.h"

namespace vdnn {
namespace test_onnx_conformance {

namespace fs = std::filesystem;

const char* const kDataRoot = "/usr/share/libonnx-testdata/data";
const char* const kRefusedList = VDNN_SOURCE_DIR "/tests/interop/onnx_conformance_refused.txt";
constexpr double kRtol = 1e-3, kAtol = 1e-7;  // onnx/backend/test/runner: assert_allclose's

// A tensor of a data set; nullopt for a missing file or another message (an optional's, a sequence's).
std::optional<onnx::TensorProto> read_tensor(const fs::path& file) {
  onnx::TensorProto t;
  std::ifstream in(file, std::ios::binary);
  if (!in || !t.ParseFromIstream(&in) || !t.has_data_type()) return std::nullopt;
  return t;
}

onnx::ModelProto read_model(const fs::path& file) {
  onnx::ModelProto m;
  std::ifstream in(file, std::ios::binary);
  if (!in || !m.ParseFromIstream(&in)) throw std::runtime_error("cannot read " + file.string());
  return m;
}

// One data set of a test, as the harness feeds it: the model with its other inputs as initializers
// (and a Flatten before a non-[N, K] output), the data, the labels, what must come out.
struct Prepared {
  onnx::ModelProto model;
  std::optional<onnx::TensorProto> data, expected;
  std::vector<int32_t> labels;
  bool loss_output = false;  // the graph's output is a SoftmaxCrossEntropyLoss's
};

bool is_loss_labels(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& n : g.node())
    if (n.op_type() == "SoftmaxCrossEntropyLoss" && n.input_size() > 1 && n.input(1) == name) return true;
  return false;
}

Prepared prepare(const onnx::ModelProto& file, const fs::path& set) {
  Prepared p{file, std::nullopt, read_tensor(set / "output_0.pb"), {}, false};
  onnx::GraphProto& g = *p.model.mutable_graph();
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  int i = 0;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) {
      *kept.Add() = in;
      continue;
    }
    const fs::path pb = set / ("input_" + std::to_string(i) + ".pb");
    std::optional<onnx::TensorProto> value = read_tensor(pb);
    if (i++ == 0 || !value) {  // the data (or what no tensor feeds: the importer judges it)
      if (i == 1) p.data = value;
      *kept.Add() = in;
    } else if (is_loss_labels(g, in.name())) {
      for (int64_t v : onnx_integers(*value, pb.string())) p.labels.push_back(static_cast<int32_t>(v));
      *kept.Add() = in;
    } else {
      value->set_name(in.name());
      *g.add_initializer() = *value;
    }
  }
  g.mutable_input()->Swap(&kept);
  for (const auto& n : g.node())
    if (n.op_type() == "SoftmaxCrossEntropyLoss" && g.output_size() > 0 && n.output(0) == g.output(0).name())
      p.loss_output = true;
  if (!p.loss_output && g.output_size() == 1 && p.expected && p.expected->dims_size() > 2) {
    onnx::NodeProto* flat = g.add_node();
    flat->set_op_type("Flatten");
    flat->set_name("conformance/Flatten");
    flat->add_input(g.output(0).name());
    flat->add_output("conformance/flat");
    g.mutable_output(0)->Clear();
    g.mutable_output(0)->set_name("conformance/flat");
  }
  return p;
}

void softmax_rows(std::vector<float>& v, size_t classes) {
  for (size_t r = 0; r + classes <= v.size(); r += classes) {
    const float top = *std::max_element(v.begin() + r, v.begin() + r + classes);
    double sum = 0;
    for (size_t c = r; c < r + classes; ++c) sum += std::exp(static_cast<double>(v[c] - top));
    for (size_t c = r; c < r + classes; ++c) v[c] = static_cast<float>(std::exp(static_cast<double>(v[c] - top)) / sum);
  }
}

// Imports and runs one data set; "" when it agrees, else what went wrong. An import error propagates.
std::string run_set(const Prepared& p, const std::string& name, double* max_diff) {
  const ImportedModel imported = import_onnx_bytes(p.model.SerializeAsString(), name);
  if (!p.data || p.data->dims_size() == 0 || !p.expected) return "failed: imported, but its data set has no tensors";
  const int64_t batch = p.data->dims(0);
  try {
    const std::vector<float> data = onnx_floats(*p.data, name + ": input_0");
    Net net(parse_model(imported.model, name), {.batch = batch, .inference = true});
    load_weights(imported.weights, net);
    std::vector<int32_t> labels = p.labels;
    labels.resize(static_cast<size_t>(batch), 0);
    net.set_batch(data.data(), labels.data(), batch);
    const float loss = net.forward(/*training=*/false);
    std::vector<float> got = p.loss_output ? std::vector<float>{loss} : net.logits();
    if (imported.output_is_softmax) softmax_rows(got, static_cast<size_t>(net.graph().classes()));
    const std::vector<float> want = onnx_floats(*p.expected, name + ": output_0");
    if (got.size() != want.size())
      return VDNN_MSG("failed: " << got.size() << " values out, " << want.size() << " expected");
    for (size_t k = 0; k < got.size(); ++k) {
      const double diff = std::abs(static_cast<double>(got[k]) - want[k]);
      *max_diff = std::max(*max_diff, diff);
      if (!(diff <= kAtol + kRtol * std::abs(static_cast<double>(want[k]))))
        return VDNN_MSG("failed: value " << k << " is " << got[k] << ", expected " << want[k]);
    }
    return "";
  } catch (const Error& e) {
    return std::string("failed: imported, then ") + e.what();
  }
}

enum class Outcome { kPassed, kRefused, kFailed };

struct CaseResult {
  std::string name, ops, detail;  // "node/test_relu", "Relu", the refusal or failure
  Outcome outcome;
};

// Runs every data set of one test folder.
CaseResult run_case(const fs::path& dir, const std::string& name, const std::string& ops) {
  const onnx::ModelProto file = read_model(dir / "model.onnx");
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  double max_diff = 0;
  for (const fs::path& set : sets) {
    try {
      const std::string wrong = run_set(prepare(file, set), name, &max_diff);
      if (!wrong.empty()) return {name, ops, set.filename().string() + ": " + wrong, Outcome::kFailed};
    } catch (const Error& e) {
      return {name, ops, e.what(), Outcome::kRefused};
    } catch (const std::exception& e) {  // anything but a vdnn::Error is a crash of the importer
      return {name, ops, std::string("crashed: ") + e.what(), Outcome::kFailed};
    }
  }
  if (sets.empty()) return {name, ops, "no test_data_set_*", Outcome::kFailed};
  return {name, ops, VDNN_MSG("max |difference| " << max_diff), Outcome::kPassed};
}

// The test's operators, "+"-joined in order of appearance; "" when one is not the importer's.
std::string operators_of(const onnx::ModelProto& m) {
  const std::vector<std::string>& known = onnx_import_operators();
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) {
    if (std::find(known.begin(), known.end(), n.op_type()) == known.end()) return "";
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
  }
  std::string out;
  for (const auto& op : ops) out += (out.empty() ? "" : "+") + op;
  return out;
}

// tests/interop/onnx_conformance_refused.txt: "<kind>/<test> <fragment of the refusal>" per line.
std::map<std::string, std::string> expected_refusals() {
  std::map<std::string, std::string> out;
  std::istringstream lines(read_text_file(kRefusedList));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    out[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return out;
}

void print_table(const std::vector<CaseResult>& results) {
  std::map<std::string, std::array<int, 3>> by_op;
  std::array<int, 3> total{};
  for (const CaseResult& r : results) ++by_op[r.ops][static_cast<int>(r.outcome)], ++total[static_cast<int>(r.outcome)];
  std::printf("| operator | passed | refused | failed |\n|---|---|---|---|\n");
  for (const auto& [op, n] : by_op) std::printf("| %s | %d | %d | %d |\n", op.c_str(), n[0], n[1], n[2]);
  std::printf("| all | %d | %d | %d |\n", total[0], total[1], total[2]);
}

TEST(OnnxConformance, EveryNodeAndPytorchConvertedTestOfAnImportedOperatorPassesOrIsAListedRefusal) {
  ASSERT_TRUE(fs::is_directory(kDataRoot)) << kDataRoot
                                           << " is missing: install Debian's libonnx-testdata (scripts/setup.sh's "
                                              "VDNN_TEST_PACKAGES)";
  const auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results;
  for (const char* kind : {"node", "pytorch-converted"}) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(fs::path(kDataRoot) / kind)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      const std::string ops = operators_of(read_model(dir / "model.onnx"));
      if (!ops.empty()) results.push_back(run_case(dir, std::string(kind) + "/" + dir.filename().string(), ops));
    }
  }
  for (const CaseResult& r : results)
    std::printf("%-8s %s: %s\n",
                r.outcome == Outcome::kPassed    ? "passed"
                : r.outcome == Outcome::kRefused ? "refused"
                                                 : "FAILED",
                r.name.c_str(), r.detail.c_str());
  print_table(results);
  std::printf("%zu tests in %.1f s\n", results.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  ASSERT_GT(results.size(), 100u) << "the package holds ~230 tests of imported operators";
  std::map<std::string, std::string> listed = expected_refusals();
  for (const CaseResult& r : results) {
    EXPECT_NE(r.outcome, Outcome::kFailed) << r.name << ": " << r.detail;
    EXPECT_EQ(r.detail.find('\n'), std::string::npos) << r.name << ": more than one line: " << r.detail;
    auto it = listed.find(r.name);
    if (r.outcome == Outcome::kRefused && it == listed.end())
      ADD_FAILURE() << r.name << " is refused, and not listed in " << kRefusedList << ": " << r.detail;
    if (r.outcome == Outcome::kRefused && it != listed.end())
      EXPECT_NE(r.detail.find(it->second), std::string::npos)
          << r.name << ": refused for another reason than listed (" << it->second << "): " << r.detail;
    if (r.outcome != Outcome::kRefused && it != listed.end())
      ADD_FAILURE() << r.name << " is listed as refused in " << kRefusedList << " but " << r.detail;
    if (it != listed.end()) listed.erase(it);
  }
  for (const auto& [name, reason] : listed) ADD_FAILURE() << kRefusedList << " lists " << name << ", which ran no case";
}

}  // namespace test_onnx_conformance
}  // namespace vdnn
