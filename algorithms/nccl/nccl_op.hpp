#pragma once
// NCCL's reduction op as its kernels apply it, shared by every NCCL collective's math.
#include <Eigen/Core>

#include "sim/api/reduce_op.hpp"

namespace aggsim {

// NCCL's reduction: avg and custom_avg pre-multiply each input as it is read (NCCL's PreMulSum,
// with the scale rounded to float), the others combine as they are.
struct NcclOp {
  ReduceKind kind = ReduceKind::sum;
  float scale = 1;
  bool premultiply = false;

  NcclOp(const ReduceOp& op, int world) {
    kind = op.kind;
    if (op.kind == ReduceKind::avg) {
      premultiply = true;
      scale = static_cast<float>(1.0 / world);
    } else if (op.kind == ReduceKind::custom_avg) {
      premultiply = true;
      scale = static_cast<float>(1.0 / op.denominator);
    }
  }
  // acc = input (as read)
  void load(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& x) const {
    if (premultiply)
      acc = x * scale;
    else
      acc = x;
  }
  // acc = acc (op) input as read
  void add_input(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& x) const {
    if (premultiply) {
      for (Eigen::Index i = 0; i < acc.size(); ++i) acc[i] = acc[i] + x[i] * scale;
      return;
    }
    combine(acc, x);
  }
  // acc = acc (op) partial result
  void combine(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& y) const {
    switch (kind) {
      case ReduceKind::min:
        acc = acc.cwiseMin(y);
        break;
      case ReduceKind::max:
        acc = acc.cwiseMax(y);
        break;
      default:
        acc += y;
    }
  }
};

}  // namespace aggsim
