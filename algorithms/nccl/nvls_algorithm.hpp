#pragma once
// NCCL's NVLS inside a node (NCCL 2.21.5, src/graph/connect.cc connectNvls; src/device/
// all_reduce.h runNvls), which NVLS-Tree (nvls_tree_algorithm.cpp) extends between nodes: each
// GPU's share goes to the NVLink switch, which reduces in line and multicasts the result.
#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

class NvlsAlgorithm : public NcclAlgorithmModel {
 public:
  using NcclAlgorithmModel::NcclAlgorithmModel;

  void build(NcclGeometryBuilder& b, int channels) const override;
  // NVLS's chain: the first piece's way through (the fill), to which the streams' time for the
  // other pieces adds.
  NcclChain chain_time(const NcclCallPlan& plan, const Geometry& g) const override {
    return {nvls_fill(plan, g), NcclCombine::additive};
  }
  void streams(const NcclCallPlan& plan, const Geometry& g, std::int64_t w,
               const NcclStreamSink& add) const override;

 private:
  double nvls_fill(const NcclCallPlan& plan, const Geometry& g) const;
};

// Each node's sum of its GPUs' inputs over `r`, in local order (what the switch reduces), by node.
std::vector<Eigen::VectorXf> nccl_nvls_node_sums(const NcclView& view, const Range& r,
                                                 const std::vector<const Eigen::VectorXf*>& inputs,
                                                 const NcclOp& op);

}  // namespace aggsim
