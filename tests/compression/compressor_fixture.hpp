#pragma once
// Builds compressors by registry name with parameter overrides, and seeded test vectors.
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

inline TensorDesc same_shape(std::int64_t rows, std::int64_t cols = 1) {
  return {{rows, cols}, WireLayout::matrix({rows, cols}), 0};
}

}  // namespace aggsim::test
