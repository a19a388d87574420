// The table of NCCL algorithms the model runs: one row per algorithm, each defined in its own file.
// The communicator and both movement engines reach an algorithm only through its row.
#include <stdexcept>
#include <string>

#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

// ring_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_ring_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_ring_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
Eigen::VectorXf ring_call_reduce_scatter(const NcclView&, const NcclCallPlan&,
                                         const std::vector<const Eigen::VectorXf*>&, const ReduceOp&, int, WireDtype);
// tree_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_tree_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_tree_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
// nvls_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_nvls_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_nvls_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
Eigen::VectorXf nvls_call_reduce_scatter(const NcclView&, const NcclCallPlan&,
                                         const std::vector<const Eigen::VectorXf*>&, const ReduceOp&, int, WireDtype);
NcclSystem nvls_system_for_calls(NcclSystem system, const NcclOptions& options);
void nvls_costs_for_calls(ProtocolCosts& costs, const NcclSystem& system, const NcclView& view,
                          const NcclOptions& options);
// nvls_tree_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_nvls_tree_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_nvls_tree_reduce(const NcclView&, const NcclCallPlan&,
                                      const std::vector<const Eigen::VectorXf*>&, const NcclOp&);

// pat_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_pat_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_pat_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                const NcclOp&);
Eigen::VectorXf pat_call_reduce_scatter(const NcclView&, const NcclCallPlan&,
                                        const std::vector<const Eigen::VectorXf*>&, const ReduceOp&, int, WireDtype);
NcclSystem pat_system_for_calls(NcclSystem system, const NcclOptions& options);

const std::vector<NcclAlgorithmRow>& nccl_algorithm_rows() {
  // NVLS-Tree runs where NVLS does (system.nvls): NVLS's rule turns both off.
  static const std::vector<NcclAlgorithmRow> rows = {
      {NcclAlgorithm::tree, make_tree_algorithm, nccl_tree_reduce},
      {NcclAlgorithm::ring, make_ring_algorithm, nccl_ring_reduce, ring_call_reduce_scatter},
      {NcclAlgorithm::nvls, make_nvls_algorithm, nccl_nvls_reduce, nvls_call_reduce_scatter,
       nvls_system_for_calls, nvls_costs_for_calls},
      {NcclAlgorithm::nvls_tree, make_nvls_tree_algorithm, nccl_nvls_tree_reduce},
      {NcclAlgorithm::pat, make_pat_algorithm, nccl_pat_reduce, pat_call_reduce_scatter, pat_system_for_calls},
  };
  return rows;
}

const NcclAlgorithmRow& nccl_algorithm_row(NcclAlgorithm a) {
  for (const NcclAlgorithmRow& row : nccl_algorithm_rows())
    if (row.algorithm == a) return row;
  throw std::logic_error(std::string("no model of NCCL's algorithm ") + nccl_algorithm_name(a));
}

}  // namespace aggsim
