#pragma once
// The element type of values on the wire: fp32, or a 16-bit type (bf16, fp16) whose values are sent
// and reduced as such, every partial result rounded to it (nearest even), as NCCL's kernels hold
// them. Shared by every collective that runs mixed precision in its math.
#include <Eigen/Core>
#include <cstdint>
#include <string>

namespace aggsim {

enum class WireDtype { fp32, bf16, fp16 };

// "fp32" | "bf16" | "fp16" (a scenario's dtype keys, checked where they are read).
inline WireDtype wire_dtype_named(const std::string& name) {
  return name == "bf16" ? WireDtype::bf16 : name == "fp16" ? WireDtype::fp16 : WireDtype::fp32;
}

// Bytes of one element on the wire.
inline std::uint64_t wire_dtype_bytes(WireDtype dtype) {
  return dtype == WireDtype::fp32 ? 4 : 2;
}

// `v` rounded to `dtype`'s values, in place (nothing to do for fp32).
inline void round_to(Eigen::Ref<Eigen::VectorXf> v, WireDtype dtype) {
  if (dtype == WireDtype::bf16)
    for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = static_cast<float>(Eigen::bfloat16(v[i]));
  else if (dtype == WireDtype::fp16)
    for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = static_cast<float>(Eigen::half(v[i]));
}

}  // namespace aggsim
