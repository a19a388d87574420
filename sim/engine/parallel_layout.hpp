#pragma once
// Data-parallel groups of a tensor x pipeline x data layout (scenario key `parallel`), in
// Megatron-LM's default order (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp" with one
// context and one expert rank): rank = t + T (d + D p) for tensor rank t, data rank d and pipeline
// stage p. The D ranks of equal (t, p) form one data-parallel group and run the scenario's
// algorithm among themselves as if they were the whole world: their Comm numbers them 0..D-1 and
// names mailboxes by global rank, so the groups' messages never meet but share the platform's links.
// Tensor- and pipeline-parallel traffic itself is not simulated.
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/options.hpp"

namespace aggsim {

// Where one rank sits in the layout.
struct DataParallelPlace {
  int group = 0;       // t + T p: the data-parallel group's index
  int data_rank = 0;   // d: the rank's index in its group
  int first_rank = 0;  // global rank of the group's data rank 0 (t + T D p)
  int stride = 1;      // T: global ranks of consecutive data ranks lie this far apart
  int group_size = 1;  // D
  int global_rank(int data_rank_in_group) const { return first_rank + stride * data_rank_in_group; }
};

DataParallelPlace data_parallel_place(const ParallelSpec& parallel, int ranks, int rank);

// The part of the layer table one tensor rank holds: every weight matrix split by rows, its other
// parameters (biases, norms) and its FLOPs by `tensor` (rounded up where they do not divide).
std::vector<LayerSpec> tensor_share(std::vector<LayerSpec> layers, int tensor);

// The nodes of a data-parallel group's ranks, numbered 0.. in data-rank order (what the algorithm
// sees as its platform layout). Throws InputError when groups differ in shape: the algorithm is
// prepared once for all of them.
RankLayout group_layout(const RankLayout& all, const ParallelSpec& parallel, int ranks, int group);
void check_groups_alike(const RankLayout& all, const ParallelSpec& parallel, int ranks,
                        const std::string& where);

// The global ranks of group 0, as ranges ("0,8,16" or "0-7"): collectives.csv's rank_group.
std::string first_group_ranks(const ParallelSpec& parallel, int ranks);

// summary.json's account of the layout: `parallel` {tensor, data, pipeline} and
// `data_parallel_groups`.
std::vector<SummaryField> parallel_summary_fields(const ParallelSpec& parallel, int ranks);

}  // namespace aggsim
