#include "sim/engine/parallel_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "sim/core/error.hpp"

namespace aggsim {

DataParallelPlace data_parallel_place(const ParallelSpec& parallel, int ranks, int rank) {
  const int tensor = parallel.tensor, data = ranks / parallel.groups();
  const int t = rank % tensor, d = rank / tensor % data, p = rank / (tensor * data);
  DataParallelPlace place;
  place.group = t + tensor * p;
  place.data_rank = d;
  place.first_rank = t + tensor * data * p;
  place.stride = tensor;
  place.group_size = data;
  place.stage = p;
  return place;
}

std::int64_t PipelineStage::params() const {
  std::int64_t n = 0;
  for (const LayerSpec& l : layers) n += l.params;
  return n;
}

namespace {

// A model known by its size alone, cut into `parts` equal layers (its compute likewise).
std::vector<LayerSpec> cut_flat(const LayerSpec& flat, int parts) {
  std::vector<LayerSpec> out;
  for (int i = 0; i < parts; ++i) {
    LayerSpec l = flat;
    l.name = fmt::format("{}-{}", flat.name, i);
    l.params = l.rows = chunk_range(flat.params, parts, i).count;
    l.forward_flops = flat.forward_flops / parts;
    l.backward_flops = flat.backward_flops / parts;
    out.push_back(std::move(l));
  }
  return out;
}

// Whether the layers fit into `stages` contiguous runs of at most `most` parameters each.
bool fits(const std::vector<LayerSpec>& layers, int stages, std::int64_t most) {
  int used = 1;
  std::int64_t sum = 0;
  for (const LayerSpec& l : layers) {
    if (l.params > most) return false;
    if (sum + l.params > most) {
      ++used;
      sum = 0;
    }
    sum += l.params;
  }
  return used <= stages;
}

}  // namespace

std::vector<PipelineStage> pipeline_stages(const std::vector<LayerSpec>& table, int pipeline) {
  const std::vector<LayerSpec> layers =
      pipeline > 1 && table.size() == 1 && table.front().unstructured ? cut_flat(table.front(), pipeline) : table;
  const auto count = static_cast<int>(layers.size());
  if (count < pipeline)
    throw InputError(fmt::format("{} pipeline stages need at least as many layers; the model has {}", pipeline,
                                 count));
  // The smallest largest-stage size a contiguous split reaches (binary search over it), then the
  // split itself: fill each stage up to it, leaving at least a layer for every stage still to fill.
  std::int64_t low = 0, high = 0;
  for (const LayerSpec& l : layers) high += l.params;
  while (low < high) {
    const std::int64_t mid = low + (high - low) / 2;
    if (fits(layers, pipeline, mid))
      high = mid;
    else
      low = mid + 1;
  }
  std::vector<PipelineStage> stages(static_cast<std::size_t>(pipeline));
  int next = 0;
  for (int p = 0; p < pipeline; ++p) {
    PipelineStage& stage = stages[static_cast<std::size_t>(p)];
    stage.first_layer = next;
    std::int64_t sum = 0;
    // The last stage takes the rest; the others leave a layer for each stage after them.
    const bool last = p + 1 == pipeline;
    const int end = last ? count : count - (pipeline - 1 - p);
    while (next < end) {
      const LayerSpec& l = layers[static_cast<std::size_t>(next)];
      if (!last && !stage.layers.empty() && sum + l.params > high) break;
      sum += l.params;
      stage.layers.push_back(l);
      ++next;
    }
  }
  return stages;
}

std::vector<LayerSpec> tensor_share(std::vector<LayerSpec> layers, int tensor) {
  if (tensor == 1) return layers;
  const auto share = [tensor](std::int64_t n) { return (n + tensor - 1) / tensor; };
  for (LayerSpec& l : layers) {
    if (l.unstructured) {
      l.params = l.rows = share(l.params);
    } else {
      const std::int64_t extra = l.params - l.rows * l.cols;
      l.rows = share(l.rows);
      l.params = l.rows * l.cols + (extra > 0 ? share(extra) : 0);
    }
    l.forward_flops /= tensor;
    l.backward_flops /= tensor;
  }
  return layers;
}

RankLayout group_layout(const RankLayout& all, const ParallelSpec& parallel, int ranks, int group) {
  RankLayout out;
  if (all.node_of_rank.empty()) return out;
  const int tensor = parallel.tensor, data = ranks / parallel.groups();
  const int first = group % tensor + tensor * data * (group / tensor);
  std::map<int, int> renumbered;  // platform node -> the group's node index
  for (int d = 0; d < data; ++d) {
    const int node = all.node_of_rank.at(static_cast<std::size_t>(first + tensor * d));
    const auto it = renumbered.emplace(node, static_cast<int>(renumbered.size())).first;
    out.node_of_rank.push_back(it->second);
  }
  return out;
}

void check_groups_alike(const RankLayout& all, const ParallelSpec& parallel, int ranks,
                        const std::string& where) {
  const RankLayout first = group_layout(all, parallel, ranks, 0);
  for (int g = 1; g < parallel.groups(); ++g)
    if (group_layout(all, parallel, ranks, g).node_of_rank != first.node_of_rank)
      throw InputError(fmt::format(
          "{}: parallel: data-parallel group {} spreads over the nodes unlike group 0 (nodes of unequal "
          "size?); the algorithm runs one plan for every group: use nodes of equal size",
          where, g));
}

std::string group_ranks(const ParallelSpec& parallel, int ranks, int group) {
  const int data = ranks / parallel.groups();
  const int first = group % parallel.tensor + parallel.tensor * data * (group / parallel.tensor);
  if (parallel.tensor == 1) return data == 1 ? std::to_string(first) : fmt::format("{}-{}", first, first + data - 1);
  std::string out;
  for (int d = 0; d < data; ++d) out += (d ? "," : "") + std::to_string(first + d * parallel.tensor);
  return out;
}

std::vector<GroupPlan> group_plans(const ParallelSpec& parallel, const std::vector<LayerSpec>& layers,
                                   const PlanRecipe& recipe) {
  const auto plan_of = [&](const std::vector<LayerSpec>& part, const std::vector<TensorInfo>& tensors,
                           std::int64_t proxy_dim) {
    return make_step_plan(tensor_share(part, parallel.tensor), recipe.bucketing, recipe.bucket_bytes, tensors,
                          proxy_dim);
  };
  if (parallel.groups() == 1) {
    GroupPlan whole;
    whole.step = plan_of(layers, recipe.proxy_tensors, recipe.proxy_dim);
    whole.proxy = {0, recipe.proxy_dim};
    return {std::move(whole)};
  }
  const std::vector<PipelineStage> stages = pipeline_stages(layers, parallel.pipeline);
  std::int64_t total = 0;
  for (const PipelineStage& s : stages) total += s.params();
  std::vector<GroupPlan> plans;
  std::int64_t stage_begin = 0, params_before = 0;
  int first_call = 0;
  for (int p = 0; p < parallel.pipeline; ++p) {
    const PipelineStage& stage = stages[static_cast<std::size_t>(p)];
    params_before += stage.params();
    const std::int64_t stage_end =
        p + 1 == parallel.pipeline
            ? recipe.proxy_dim
            : static_cast<std::int64_t>(std::llround(static_cast<double>(recipe.proxy_dim) *
                                                     static_cast<double>(params_before) / static_cast<double>(total)));
    int calls = 0;
    for (int t = 0; t < parallel.tensor; ++t) {
      const Range share = chunk_range(stage_end - stage_begin, parallel.tensor, t);
      if (recipe.proxy_dim > 0 && share.count == 0)
        throw InputError(fmt::format("the math plane's {} parameters leave tensor rank {} of pipeline stage {} "
                                     "nothing to aggregate: use a larger model.proxy_dim (or workload) or a "
                                     "smaller parallel layout",
                                     recipe.proxy_dim, t, p));
      GroupPlan g;
      g.step = plan_of(stage.layers, {}, share.count);
      for (Bucket& b : g.step.buckets) {
        b.proxy.begin += stage_begin + share.begin;
        b.first_layer += stage.first_layer;
        b.last_layer += stage.first_layer;
      }
      g.proxy = {stage_begin + share.begin, share.count};
      g.first_call = first_call;
      g.stage = p;
      calls = static_cast<int>(g.step.buckets.size()) * recipe.calls_per_bucket;
      plans.push_back(std::move(g));
    }
    first_call += calls;
    stage_begin = stage_end;
  }
  return plans;
}

std::vector<SummaryField> parallel_summary_fields(const ParallelSpec& parallel, int ranks) {
  SummaryField layout;
  layout.key = "parallel";
  layout.object = std::vector<std::pair<std::string, double>>{
      {"tensor", parallel.tensor}, {"data", ranks / parallel.groups()}, {"pipeline", parallel.pipeline}};
  return {layout, {"data_parallel_groups", static_cast<double>(parallel.groups())}};
}

}  // namespace aggsim
