// The table of NCCL algorithms the model runs: one row per algorithm, each defined in its own file.
#include <stdexcept>
#include <string>

#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

// ring_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_ring_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_ring_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
// tree_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_tree_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_tree_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
// nvls_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_nvls_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_nvls_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                 const NcclOp&);
// nvls_tree_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_nvls_tree_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_nvls_tree_reduce(const NcclView&, const NcclCallPlan&,
                                      const std::vector<const Eigen::VectorXf*>&, const NcclOp&);

// pat_algorithm.cpp
std::unique_ptr<NcclAlgorithmModel> make_pat_algorithm(const NcclContext& context);
Eigen::VectorXf nccl_pat_reduce(const NcclView&, const NcclCallPlan&, const std::vector<const Eigen::VectorXf*>&,
                                const NcclOp&);

namespace {

const NcclAlgorithmRow kNcclAlgorithmRows[] = {
    {NcclAlgorithm::tree, make_tree_algorithm, nccl_tree_reduce},
    {NcclAlgorithm::ring, make_ring_algorithm, nccl_ring_reduce},
    {NcclAlgorithm::nvls, make_nvls_algorithm, nccl_nvls_reduce},
    {NcclAlgorithm::nvls_tree, make_nvls_tree_algorithm, nccl_nvls_tree_reduce},
    {NcclAlgorithm::pat, make_pat_algorithm, nccl_pat_reduce},
};

}  // namespace

const NcclAlgorithmRow& nccl_algorithm_row(NcclAlgorithm a) {
  for (const NcclAlgorithmRow& row : kNcclAlgorithmRows)
    if (row.algorithm == a) return row;
  throw std::logic_error(std::string("no model of NCCL's algorithm ") + nccl_algorithm_name(a));
}

}  // namespace aggsim
