#pragma once
// Data-parallel groups of a tensor x pipeline x data layout (scenario key `parallel`), in
// Megatron-LM's default order (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp" with one
// context and one expert rank): rank = t + T (d + D p) for tensor rank t, data rank d and pipeline
// stage p. The D ranks of equal (t, p) form one data-parallel group and run the scenario's
// algorithm among themselves as if they were the whole world: their Comm numbers them 0..D-1 and
// names mailboxes by global rank, so the groups' messages never meet but share the platform's links.
// Pipeline stage p holds a contiguous run of the layer table (stages of near-equal bytes); its tensor
// ranks each hold 1/T of it. Tensor- and pipeline-parallel traffic itself is not simulated.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/api/partition.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/options.hpp"

namespace aggsim {

// Where one rank sits in the layout.
struct DataParallelPlace {
  int group = 0;       // t + T p: the data-parallel group's index
  int data_rank = 0;   // d: the rank's index in its group
  int first_rank = 0;  // global rank of the group's data rank 0 (t + T D p)
  int stride = 1;      // T: global ranks of consecutive data ranks lie this far apart
  int group_size = 1;  // D
  int stage = 0;       // p
  int global_rank(int data_rank_in_group) const { return first_rank + stride * data_rank_in_group; }
};

DataParallelPlace data_parallel_place(const ParallelSpec& parallel, int ranks, int rank);

// Pipeline stage p's layers: a contiguous run of the table, the P runs chosen so that the largest
// stage holds as few parameters as a contiguous split allows (each stage at least one layer). A
// model known only by its size (one unstructured layer) is cut into P equal stages. Throws
// InputError when the table has fewer layers than stages.
struct PipelineStage {
  int first_layer = 0;  // forward-order index of its first layer in the table
  std::vector<LayerSpec> layers;
  std::int64_t params() const;
};
std::vector<PipelineStage> pipeline_stages(const std::vector<LayerSpec>& layers, int pipeline);

// The part of the layer table one tensor rank holds: every weight matrix split by rows, its other
// parameters (biases, norms) and its FLOPs by `tensor` (rounded up where they do not divide).
std::vector<LayerSpec> tensor_share(std::vector<LayerSpec> layers, int tensor);

// The nodes of a data-parallel group's ranks, numbered 0.. in data-rank order (what the algorithm
// sees as its platform layout). Throws InputError when groups differ in shape: the algorithm is
// prepared once for all of them.
RankLayout group_layout(const RankLayout& all, const ParallelSpec& parallel, int ranks, int group);
void check_groups_alike(const RankLayout& all, const ParallelSpec& parallel, int ranks,
                        const std::string& where);

// The global ranks of data-parallel group `group`, as ranges ("0,8,16" or "0-7"): collectives.csv's
// rank_group.
std::string group_ranks(const ParallelSpec& parallel, int ranks, int group);

// What one data-parallel group runs each step: its stage's 1/T share of the layers as a step plan
// (layer indices are the whole table's), the slice of the proxy parameter vector its buckets tile
// (the math plane), and its first call slot in collectives.csv (a stage's tensor ranks run the
// same calls at once and share the stage's slots).
struct GroupPlan {
  StepPlan step;
  Range proxy;
  int first_call = 0;
  int stage = 0;
};

// How the step plans are made: the scenario's bucketing, and one call slot per bucket or several
// (sharded data parallelism's reduce-scatter and gathers of each unit).
struct PlanRecipe {
  Bucketing bucketing = Bucketing::by_size;
  std::uint64_t bucket_bytes = 0;
  int calls_per_bucket = 1;
  std::vector<TensorInfo> proxy_tensors;  // the workload's, or empty: a flat proxy
  std::int64_t proxy_dim = 0;
};

// One plan per data-parallel group (group t + T p). Without a layout, the one plan of the whole model
// over the whole proxy vector, its tensors kept. Under a layout the proxy vector is cut among the
// stages in proportion to their parameters, and each stage's slice into T near-equal ones, each
// flat; throws InputError when a group's slice would be empty.
std::vector<GroupPlan> group_plans(const ParallelSpec& parallel, const std::vector<LayerSpec>& layers,
                                   const PlanRecipe& recipe);

// summary.json's account of the layout: `parallel` {tensor, data, pipeline} and
// `data_parallel_groups`.
std::vector<SummaryField> parallel_summary_fields(const ParallelSpec& parallel, int ranks);

}  // namespace aggsim
