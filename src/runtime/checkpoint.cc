#include "runtime/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>

#include "util/sha256.h"
#include "util/utf8.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

constexpr const char* kFormat = "vdnn-checkpoint";
const std::string kBatchesTracked = ".num_batches_tracked";

// "':exp_avg' and ':exp_avg_sq' per trainable parameter"
std::string state_names(OptimizerKind optimizer) {
  std::string names;
  for (const std::string& s : optimizer_state_suffixes(optimizer)) names += (names.empty() ? "'" : " and '") + s + "'";
  return names + " per trainable parameter";
}

bool is_batch_norm(const Net& net, int node) { return net.graph().nodes()[node].layer->type() == "batch_norm"; }

std::string batches_tracked_name(const Net& net, int node) {
  return net.graph().nodes()[node].layer->name() + kBatchesTracked;
}

// A batch norm's num_batches_tracked in `file`, if it has one: an integer scalar >= steps_done.
std::optional<int64_t> batches_tracked(const SafeTensors& file, const std::string& name, int64_t steps_done) {
  const SafeTensor* t = file.find(name);
  if (!t) return std::nullopt;
  const std::string path = file.path.empty() ? "safetensors" : file.path;
  if (!t->is_integer() || !t->shape.empty())
    VDNN_THROW(path << ": tensor '" << name << "' is " << t->dtype << " " << shape_text(t->shape)
                    << ", expected an integer scalar (shape []), as PyTorch's BatchNorm writes it");
  const int64_t v = t->integers[0];
  if (v < steps_done)
    VDNN_THROW(path << ": tensor '" << name << "' is " << v << ", expected a count >= " << steps_done
                    << " (the optimizer steps the checkpoint has done)");
  return v;
}

std::string exact(double v) { return VDNN_MSG(std::setprecision(17) << v); }

// A metadata field of a checkpoint; throws naming the file and the field when it is missing.
const std::string& text(const SafeTensors& f, const std::string& key) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    VDNN_THROW(f.path << ": not a complete vdnn checkpoint: metadata '" << key
                      << "' is missing (a file with weights only can be evaluated with `vdnn infer`)");
  return it->second;
}

// The same, as a non-negative integer.
uint64_t number(const SafeTensors& f, const std::string& key) {
  const std::string& s = text(f, key);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    VDNN_THROW(f.path << ": metadata '" << key << "' is '" << s << "', expected a non-negative integer");
  return v;
}

// The same, for counts (steps, batch size) that must fit an int64_t.
int64_t count(const SafeTensors& f, const std::string& key) {
  const uint64_t v = number(f, key);
  if (v > static_cast<uint64_t>(INT64_MAX))
    VDNN_THROW(f.path << ": metadata '" << key << "' is " << v << ", too large for a count");
  return static_cast<int64_t>(v);
}

// The values a tensor loaded into `param` may hold: finite numbers, and a batch norm's running
// variance must be >= 0 (its square root is taken). A file that breaks this would evaluate to a
// plausible-looking loss or to NaN; it is refused instead, by --resume and `vdnn infer` alike.
const std::vector<float>& checked_values(const SafeTensors& f, const std::string& name, const ParamSpec& spec,
                                         const std::vector<float>& values) {
  const std::string file = f.path.empty() ? "safetensors" : f.path;
  for (size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k]))
      VDNN_THROW(file << ": tensor '" << name << "' element " << k << " is " << values[k]
                      << " (expected finite numbers: the file is damaged or the run that wrote it diverged)");
    if (spec.name == "running_var" && values[k] < 0)
      VDNN_THROW(file << ": tensor '" << name << "' element " << k << " is " << values[k]
                      << " (a batch-norm running variance must be >= 0)");
  }
  return values;
}

// The tensor `name` holding parameter `spec`: in PyTorch's shape (spec.file_dims()), or in vdnn's
// internal one (spec.dims, which files written before held; the same memory order either way).
const SafeTensor& require_param(const SafeTensors& file, const std::string& name, const ParamSpec& spec,
                                const std::string& what) {
  const SafeTensor* found = file.find(name);
  return file.require(name, found && found->shape == spec.dims ? spec.dims : spec.file_dims(), what);
}

std::string hash_mismatch(const SafeTensors& file) {
  return VDNN_MSG(file.path << ": the weights do not hash to the weights_sha256 in its metadata (the file is "
                            << "corrupted)");
}

}  // namespace

bool is_batches_tracked(const std::string& tensor_name) {
  return tensor_name.size() > kBatchesTracked.size() && tensor_name.ends_with(kBatchesTracked);
}

SafeTensors read_weights_file(const std::string& path) {
  return read_safetensors(path, {.accept_integer = is_batches_tracked});
}

std::vector<std::pair<std::string, std::string>> tied_parameter_names(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const Node& node : graph.nodes()) {
    if (node.param_owner < 0 || node.slices > 1) continue;  // slices of one layer share it too
    const Node& owner = graph.nodes()[node.param_owner];
    for (const ParamSpec& spec : owner.params)
      names.emplace_back(node.layer->name() + "." + spec.name, owner.layer->name() + "." + spec.name);
  }
  return names;
}

SafeTensors state_dict(const Net& net, int64_t step) {
  SafeTensors f;
  const std::vector<ParamTensor>& params = net.params();
  for (size_t i = 0; i < params.size(); ++i) {
    f.tensors.push_back({params[i].name, params[i].spec.file_dims(), net.export_param(i)});
    const int node = params[i].node;
    if (is_batch_norm(net, node) && (i + 1 == params.size() || params[i + 1].node != node))  // after its last
      f.tensors.push_back({batches_tracked_name(net, node), {}, {}, "I64", {net.batches_tracked_base(node) + step}});
  }
  for (const auto& [tied, owner] : tied_parameter_names(net.graph())) {
    SafeTensor copy = *f.find(owner);
    copy.name = tied;
    f.tensors.push_back(std::move(copy));
  }
  return f;
}

std::string class_names_metadata(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& name : names) list.push_back(escape_invalid_utf8(name));
  return list.dump();
}

void save_weights(const std::string& path, const Net& net, uint64_t seed, int64_t step,
                  const std::vector<std::string>& class_names) {
  SafeTensors f = state_dict(net, step);
  f.metadata = {{"model", net.graph().name()},
                {"seed", std::to_string(seed)},
                {"step", std::to_string(step)},
                {"weights_sha256", net.weights_sha256()}};
  if (!class_names.empty()) f.metadata["class_names"] = class_names_metadata(class_names);
  write_safetensors(path, f);
}

void save_checkpoint(const std::string& path, const Net& net, const TrainConfig& config, const CheckpointPosition& at,
                     const std::vector<std::string>& class_names) {
  SafeTensors f = state_dict(net, at.step);
  const std::vector<ParamTensor>& params = net.params();
  const OptimizerKind optimizer = net.options().optimizer;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].grad)
      for (const std::string& state : optimizer_state_suffixes(optimizer))
        f.tensors.push_back({params[i].name + state, params[i].spec.file_dims(), net.export_state(i, state)});
  const int64_t per_epoch = std::max<int64_t>(1, at.steps_per_epoch);
  f.metadata = {
      {"format", kFormat},
      {"format_version", std::to_string(kCheckpointFormatVersion)},
      {"model", net.graph().name()},
      {"batch", std::to_string(net.batch())},
      {"ranks", std::to_string(net.ranks())},
      {"seed", std::to_string(config.seed)},
      {"step", std::to_string(at.step)},
      {"epoch", std::to_string(at.step / per_epoch)},
      {"epoch_step", std::to_string(at.step % per_epoch)},
      {"steps_per_epoch", std::to_string(per_epoch)},
      {"total_steps", std::to_string(at.total_steps)},
      {"dropout_step", std::to_string(net.dropout_step())},
      {"optimizer", to_string(optimizer)},
      {"optimizer_steps", std::to_string(at.optimizer_steps >= 0 ? at.optimizer_steps : at.step)},
      {"lr", exact(config.lr)},
      {"lr_schedule", LrSchedule::name(config.schedule)},
      {"lr_step_epochs", std::to_string(config.step_epochs)},
      {"lr_gamma", exact(config.gamma)},
      {"momentum", exact(config.momentum)},
      {"weight_decay", exact(config.weight_decay)},
      {"weight_decay_on", SgdConfig::name(config.weight_decay_on)},
      {"beta1", exact(config.beta1)},
      {"beta2", exact(config.beta2)},
      {"eps", exact(config.eps)},
      {"clip_grad_norm", exact(config.clip_grad_norm)},
      {"warmup_steps", std::to_string(config.warmup_steps)},
      {"min_lr", exact(config.min_lr)},
      {"augment", augmentation_name(config.augment)},
      {"weights_sha256", net.weights_sha256()},
  };
  if (!class_names.empty()) f.metadata["class_names"] = class_names_metadata(class_names);
  write_safetensors(path, f);
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint c;
  c.file = read_weights_file(path);
  const auto& m = c.file.metadata;
  auto format = m.find("format");
  if (format == m.end() || format->second != kFormat)
    VDNN_THROW(path << ": not a vdnn checkpoint (its metadata has no \"format\": \"" << kFormat
                    << "\"; a file with weights only can be evaluated with `vdnn infer`)");
  const uint64_t version = number(c.file, "format_version");
  if (version != kCheckpointFormatVersion)
    VDNN_THROW(path << ": checkpoint format version " << version << ", this vdnn reads version "
                    << kCheckpointFormatVersion);
  c.model = text(c.file, "model");
  c.batch = count(c.file, "batch");
  c.seed = number(c.file, "seed");
  c.position.step = count(c.file, "step");
  c.position.steps_per_epoch = count(c.file, "steps_per_epoch");
  c.position.total_steps = count(c.file, "total_steps");
  c.dropout_step = number(c.file, "dropout_step");
  if (m.count("ranks")) c.ranks = count(c.file, "ranks");  // absent: written before data parallelism, 1
  if (c.ranks < 1) VDNN_THROW(path << ": metadata 'ranks' is 0, expected the number of ranks (>= 1)");
  if (auto on = m.find("weight_decay_on"); on != m.end()) {  // absent: written before it, "weights"
    try {
      c.weight_decay_on = SgdConfig::parse_decay_on(on->second);
    } catch (const Error&) {
      VDNN_THROW(path << ": metadata 'weight_decay_on' is '" << on->second << "', expected weights or all");
    }
  }
  if (auto augment = m.find("augment"); augment != m.end()) c.augment = augment->second;  // absent: before it, none
  if (auto optimizer = m.find("optimizer"); optimizer != m.end()) {  // absent: written before AdamW, sgd
    try {
      c.optimizer = parse_optimizer(optimizer->second);
    } catch (const Error&) {
      VDNN_THROW(path << ": metadata 'optimizer' is '" << optimizer->second << "', expected sgd or adamw");
    }
  }
  c.optimizer_steps = m.count("optimizer_steps") ? count(c.file, "optimizer_steps") : c.position.step;
  if (c.batch < 1) VDNN_THROW(path << ": metadata 'batch' is 0, expected a batch size >= 1");
  const int64_t per_epoch = c.position.steps_per_epoch, step = c.position.step;
  if (per_epoch < 1) VDNN_THROW(path << ": metadata 'steps_per_epoch' is 0, expected >= 1");
  if (count(c.file, "epoch") != step / per_epoch || count(c.file, "epoch_step") != step % per_epoch)
    VDNN_THROW(path << ": inconsistent metadata: epoch " << m.at("epoch") << ", epoch_step " << m.at("epoch_step")
                    << " with " << per_epoch << " steps per epoch is not step " << step);
  return c;
}

void check_resumable(const Checkpoint& c, const std::string& model, int64_t batch, uint64_t seed) {
  const std::string& path = c.file.path;
  if (c.model != model)
    VDNN_THROW("--resume " << path << ": the checkpoint is of model '" << c.model << "' but this run trains '" << model
                           << "'");
  if (c.batch != batch)
    VDNN_THROW("--resume " << path << ": the checkpoint was trained with --batch " << c.batch
                           << " but this run has --batch " << batch);
  if (c.seed != seed)
    VDNN_THROW("--resume " << path << ": the checkpoint was trained with --seed " << c.seed
                           << " but this run has --seed " << seed << " (the data order and dropout follow the seed)");
}

void check_same_ranks(const Checkpoint& c, int ranks) {
  if (c.ranks != ranks)
    VDNN_THROW("--resume " << c.file.path << ": the checkpoint was written by a run of " << c.ranks << " rank"
                           << (c.ranks == 1 ? "" : "s") << " but this run has " << ranks
                           << " (each rank's share of the data and its dropout masks follow the number of ranks: "
                           << (c.ranks == 1 ? std::string("run it without mpirun")
                                            : VDNN_MSG("run it with mpirun -np " << c.ranks))
                           << " to continue it)");
}

void check_same_decay_rule(const Checkpoint& c, const TrainConfig& config) {
  if (c.weight_decay_on != config.weight_decay_on)
    VDNN_THROW("--resume " << c.file.path << ": the checkpoint was trained with --weight-decay-on "
                           << SgdConfig::name(c.weight_decay_on) << " but this run has --weight-decay-on "
                           << SgdConfig::name(config.weight_decay_on));
}

void check_same_augmentation(const Checkpoint& c, const TrainConfig& config) {
  if (c.augment != augmentation_name(config.augment))
    VDNN_THROW("--resume " << c.file.path << ": the checkpoint was trained with --augment " << c.augment
                           << " but this run has --augment " << augmentation_name(config.augment)
                           << " (the batches a resumed run draws follow it)");
}

namespace {

// A file may hold a tied parameter under the tied layer's name too (PyTorch's state_dict does):
// that copy must equal the owner's tensor, else the file's model is not tied as this one is.
// Checked once, before anything is imported.
void check_tied_copies(const SafeTensors& file, const Graph& graph) {
  for (const auto& [tied, owner_name] : tied_parameter_names(graph)) {
    const SafeTensor *copy = file.find(tied), *owner = file.find(owner_name);
    if (copy && owner && copy->data != owner->data)
      VDNN_THROW(file.path << ": '" << tied << "' differs from '" << owner_name << "', to which model '" << graph.name()
                           << "' ties it (tied_to): a tied model holds one tensor, so the two must be equal");
  }
}

// load_weights; `consumed` (the file itself, or null) has each tensor's values freed once imported.
void load_into(const SafeTensors& file, Net& net, int64_t steps_done, SafeTensors* consumed) {
  const std::vector<ParamTensor>& params = net.params();
  const std::string model = "model '" + net.graph().name() + "'";
  check_tied_copies(file, net.graph());
  for (size_t i = 0; i < params.size(); ++i) {
    const SafeTensor& t = require_param(file, params[i].name, params[i].spec, model);
    net.import_param(i, checked_values(file, t.name, params[i].spec, t.data));
    if (consumed) std::vector<float>().swap(consumed->tensors[&t - file.tensors.data()].data);
  }
  for (int node = 0; node < static_cast<int>(net.graph().nodes().size()); ++node)
    if (is_batch_norm(net, node))
      net.set_batches_tracked_base(
          node, batches_tracked(file, batches_tracked_name(net, node), steps_done).value_or(steps_done) - steps_done);
  auto hash = file.metadata.find("weights_sha256");
  if (hash != file.metadata.end() && hash->second != net.weights_sha256()) VDNN_THROW(hash_mismatch(file));
}

}  // namespace

void load_weights(const SafeTensors& file, Net& net, int64_t steps_done) { load_into(file, net, steps_done, nullptr); }

void load_weights(SafeTensors&& file, Net& net) { load_into(file, net, 0, &file); }

namespace {

// Net::weights_sha256 of `file` for `graph`: every parameter's plain floats, in graph order; each
// tensor is passed to `check` (by its name) as it is hashed.
template <typename Check>
std::string hash_params(const SafeTensors& file, const Graph& graph, Check check) {
  Sha256 sha;
  for (const Node& node : graph.nodes()) {
    if (node.param_owner >= 0) continue;  // a tied layer's parameters are its owner's, hashed there
    for (const ParamSpec& spec : node.params) {
      const std::string name = node.layer->name() + "." + spec.name;
      const SafeTensor& t = require_param(file, name, spec, "model '" + graph.name() + "'");
      check(name, spec, t);
      sha.update(t.data.data(), t.data.size() * sizeof(float));
    }
  }
  return sha.hex_digest();
}

}  // namespace

std::string weights_sha256(const SafeTensors& file, const Graph& graph) {
  return hash_params(file, graph, [](const std::string&, const ParamSpec&, const SafeTensor&) {});
}

std::string check_weights(const SafeTensors& file, const Graph& graph) {
  const std::string hex =
      hash_params(file, graph, [&](const std::string& name, const ParamSpec& spec, const SafeTensor& t) {
        checked_values(file, name, spec, t.data);
      });
  auto hash = file.metadata.find("weights_sha256");
  if (hash != file.metadata.end() && hex != hash->second) VDNN_THROW(hash_mismatch(file));
  return hex;
}

void restore_checkpoint(const Checkpoint& c, Net& net) {
  const OptimizerKind optimizer = net.options().optimizer;
  if (c.optimizer != optimizer)
    VDNN_THROW("--resume " << c.file.path << ": the checkpoint was trained with --optimizer " << to_string(c.optimizer)
                           << " but this run has --optimizer " << to_string(optimizer)
                           << " (their states differ: " << to_string(c.optimizer) << " keeps "
                           << state_names(c.optimizer) << ", " << to_string(optimizer) << " " << state_names(optimizer)
                           << "); resume it with --optimizer " << to_string(c.optimizer)
                           << ", or start a new run from its weights with --initial-weights " << c.file.path);
  load_weights(c.file, net, c.position.step);
  const std::vector<ParamTensor>& params = net.params();
  const std::string owner = optimizer == OptimizerKind::kAdamW ? "AdamW" : "SGD";
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].grad)
      for (const std::string& state : optimizer_state_suffixes(optimizer)) {
        const SafeTensor& t = require_param(c.file, params[i].name + state, params[i].spec, owner);
        net.import_state(i, state, checked_values(c.file, t.name, ParamSpec{}, t.data));
      }
  net.set_dropout_step(c.dropout_step);
}

}  // namespace vdnn
