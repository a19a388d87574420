#pragma once
// Builds compressors by registry name with parameter overrides, and seeded test vectors.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/registry.hpp"

namespace aggsim::test {

inline std::unique_ptr<Compressor> make_compressor(const std::string& name,
                                                   const std::map<std::string, std::string>& overrides = {}) {
  const CompressorInfo* info = find_compressor(name);
  if (!info) throw std::invalid_argument("no compressor " + name);
  Params params = default_params(info->params);
  for (const auto& [key, text] : overrides) {
    const ParamSpec* spec = nullptr;
    for (const auto& s : info->params)
      if (s.key == key) spec = &s;
    if (!spec) throw std::invalid_argument(name + " has no parameter " + key);
    params.set(key, parse_param(*spec, text));
  }
  return info->make(params);
}

inline Eigen::VectorXf normal_vector(Eigen::Index n, std::uint64_t seed) {
  Rng rng = make_rng(seed, Stream::gradient);
  Eigen::VectorXf v(n);
  for (Eigen::Index i = 0; i < n; ++i) v[i] = static_cast<float>(standard_normal(rng));
  return v;
}

// p hosts of 100 Gflop/s on one switch under alpha_beta (a transfer: 2 us + bytes / 1.25e9 s), two
// steps; `model`, `algorithm` and `compression` are the insides of those YAML maps.
inline std::string compression_scenario(int p, const std::string& model, const std::string& algorithm,
                                        const std::string& compression) {
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: 2
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us, speed: 100Gf}}
network: alpha_beta
model: {{{model}}}
algorithm: {{{alg}}}
compression: {{{comp}}}
compute: {{reduce_speed: 0}}
)",
                     fmt::arg("p", p), fmt::arg("model", model), fmt::arg("alg", algorithm),
                     fmt::arg("comp", compression));
}

inline TensorDesc same_shape(std::int64_t rows, std::int64_t cols = 1) {
  return {{rows, cols}, WireLayout::matrix({rows, cols}), 0, {}};
}

}  // namespace aggsim::test
