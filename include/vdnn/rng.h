// vdnn/rng.h — a small deterministic random generator (xoshiro256** seeded by splitmix64).
//
// Model: every random decision in vdnn (weight init, shuffling, dropout masks, synthetic data) draws
// from an Rng built from the user's --seed plus a purpose-specific stream id, so results are identical
// across runs, machines and standard libraries (std::normal_distribution is not portable; this is).
//
//   vdnn::Rng rng(seed, /*stream=*/7);
//   float u = rng.uniform();          // [0, 1)
//   float z = rng.normal();           // N(0, 1), Box-Muller
//   uint64_t k = rng.below(10);       // uniform integer in [0, 10)
#pragma once

#include <cmath>
#include <cstdint>

namespace vdnn {

class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0) {
    uint64_t x = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
    for (auto& s : state_) s = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 24 random bits (exactly representable in float).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-64 * n, negligible).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

  // Standard normal by Box-Muller in double, rounded to float.
  float normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = (static_cast<double>(next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2.0 * M_PI * u2));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  uint64_t state_[4];
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

}  // namespace vdnn
