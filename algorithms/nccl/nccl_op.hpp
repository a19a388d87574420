#pragma once
// NCCL's reduction op as its kernels apply it, shared by every NCCL collective's math.
#include <Eigen/Core>

#include "sim/api/reduce_op.hpp"
#include "sim/api/wire_dtype.hpp"

namespace aggsim {

// NCCL's reduction: avg and custom_avg pre-multiply each input as it is read (NCCL's PreMulSum,
// with the scale rounded to float), the others combine as they are; in a 16-bit `dtype` every
// input and partial result is a value of that type.
struct NcclOp {
  ReduceKind kind = ReduceKind::sum;
  float scale = 1;
  bool premultiply = false;
  WireDtype dtype = WireDtype::fp32;

  NcclOp(const ReduceOp& op, int world, WireDtype type = WireDtype::fp32) {
    dtype = type;
    kind = op.kind;
    if (op.kind == ReduceKind::avg) {
      premultiply = true;
      scale = static_cast<float>(1.0 / world);
    } else if (op.kind == ReduceKind::custom_avg) {
      premultiply = true;
      scale = static_cast<float>(1.0 / op.denominator);
    }
    // NCCL holds a 16-bit type's scale in that type.
    Eigen::Matrix<float, 1, 1> s(scale);
    round_to(s, dtype);
    scale = s[0];
  }
  // acc = input (as read)
  void load(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& x) const {
    if (dtype != WireDtype::fp32) {
      acc = x;
      round_to(acc, dtype);  // the input is held in the 16-bit type
      if (premultiply) {
        acc *= scale;
        round_to(acc, dtype);
      }
      return;
    }
    if (premultiply)
      acc = x * scale;
    else
      acc = x;
  }
  // acc = acc (op) input as read
  void add_input(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& x) const {
    if (dtype != WireDtype::fp32) {
      Eigen::VectorXf read(acc.size());
      load(read, x);
      combine(acc, read);
      return;
    }
    if (premultiply) {
      for (Eigen::Index i = 0; i < acc.size(); ++i) acc[i] = acc[i] + x[i] * scale;
      return;
    }
    combine(acc, x);
  }
  // acc = acc (op) partial result
  void combine(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& y) const {
    ReduceOp{kind}.combine(acc, y);  // min, max or add, as every aggregation combines
    round_to(acc, dtype);
  }
};

}  // namespace aggsim
