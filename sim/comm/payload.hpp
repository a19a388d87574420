#pragma once
// What one simulated message carries: the real data it stands for, and the size of its encoding.
// SimGrid transfers exactly `wire_bytes`; the receiver gets the data itself (and owns it).
#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace aggsim {

struct Payload {
  Eigen::VectorXf values;              // dense data, or the kept values of a sparse/quantized encoding
  std::vector<std::uint32_t> indices;  // positions of `values` in a sparse encoding
  Eigen::VectorXf scales;              // norms / scales of a quantized encoding
  std::vector<std::uint8_t> codes;     // quantization levels, sign bits, ...
  std::int64_t tag = 0;                // protocol use: step number, layer id, sender rank, ...
  std::uint64_t seed = 0;        // the encoding's own use (random-k's index seed); protocols leave it alone
  std::uint64_t wire_bytes = 0;  // simulated size on the network
};

}  // namespace aggsim
