#include "plan/program_cache.h"

namespace vdnn {
namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

uint64_t mix(uint64_t h, const StorageDecision& d) {
  h = mix(h, static_cast<uint64_t>(d.action));
  h = mix(h, static_cast<uint64_t>(static_cast<int64_t>(d.prefetch_at)));
  return mix(h, static_cast<uint64_t>(static_cast<int64_t>(d.release_at)));
}

}  // namespace

uint64_t hash_of(const ProgramKey& key) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, static_cast<uint64_t>(key.policy));
  h = mix(h, key.training);
  h = mix(h, static_cast<uint64_t>(static_cast<int64_t>(key.prefetch_depth)));
  h = mix(h, static_cast<uint64_t>(key.optimizer));
  h = mix(h, static_cast<uint64_t>(key.optimizer_state));
  for (int a : key.algos) h = mix(h, static_cast<uint64_t>(static_cast<int64_t>(a)));
  h = mix(h, key.decisions.values.size());
  for (const StorageDecision& d : key.decisions.values) h = mix(h, d);
  for (const auto& node : key.decisions.saved) {
    h = mix(h, node.size());
    for (const StorageDecision& d : node) h = mix(h, d);
  }
  return h;
}

uint64_t hash_of(const EvaluationKey& key) {
  uint64_t h = mix(hash_of(key.train), key.budget);
  h = mix(h, static_cast<uint64_t>(key.prefetch));
  return mix(h, key.host_budget);
}

}  // namespace vdnn
