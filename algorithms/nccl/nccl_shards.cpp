// A reduce-scatter's and an all-gather's shards and results, whichever algorithm moves them.
#include "algorithms/nccl/nccl_shards.hpp"

#include <stdexcept>
#include <string>

#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

Eigen::VectorXf nccl_all_gather(const std::vector<const Eigen::VectorXf*>& inputs, WireDtype dtype) {
  const int p = static_cast<int>(inputs.size());
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out(n);
  for (int m = 0; m < p; ++m) {
    const Range r = nccl_shard(n, p, m);
    out.segment(r.begin, r.count) = inputs[static_cast<std::size_t>(m)]->segment(r.begin, r.count);
  }
  round_to(out, dtype);
  return out;
}

Eigen::VectorXf nccl_shard_collective(const NcclView& view, const NcclCallPlan& plan,
                                      NcclCollective collective,
                                      const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                      int world, WireDtype dtype) {
  // Every algorithm's all-gather ends with the same copies.
  if (collective == NcclCollective::all_gather) return nccl_all_gather(inputs, dtype);
  if (collective != NcclCollective::reduce_scatter)
    throw std::logic_error("nccl_shard_collective: a reduce-scatter or all-gather");
  const NcclAlgorithmRow& row = nccl_algorithm_row(plan.choice.algorithm);
  if (!row.reduce_scatter)
    throw std::logic_error(std::string("nccl_shard_collective: NCCL runs no reduce-scatter by ") +
                           nccl_algorithm_name(plan.choice.algorithm));
  return row.reduce_scatter(view, plan, inputs, op, world, dtype);
}

void keep_shard(Eigen::VectorXf& values, int members, int m) {
  const Range mine = nccl_shard(values.size(), members, m);
  const Eigen::VectorXf kept = values.segment(mine.begin, mine.count);
  values.setZero();
  values.segment(mine.begin, mine.count) = kept;
}

}  // namespace aggsim
