#pragma once
// mlbench-core's reduction ops. sum/avg/custom_avg add; min/max are element-wise. The division of
// avg/custom_avg happens once, on fully reduced data, so every rank ends with identical bits.
#include <Eigen/Core>
#include <string>
#include <vector>

namespace aggsim {

enum class ReduceKind { sum, avg, min, max, custom_avg };

struct ReduceOp {
  ReduceKind kind = ReduceKind::avg;
  double denominator = 1.0;  // custom_avg only

  // acc = acc (op) incoming
  void combine(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& incoming) const;
  // Applied once to reduced data: divides for avg (by world size) and custom_avg (by denominator).
  void finalize(Eigen::Ref<Eigen::VectorXf> reduced, int world_size) const;
  bool adds() const {
    return kind == ReduceKind::sum || kind == ReduceKind::avg || kind == ReduceKind::custom_avg;
  }
};

const char* reduce_kind_name(ReduceKind kind);
// Every kind's name, in declaration order (the YAML choices of `op`).
std::vector<std::string> reduce_kind_names();
// Throws std::invalid_argument naming the accepted values.
ReduceKind parse_reduce_kind(const std::string& name);

}  // namespace aggsim
