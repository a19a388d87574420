#include "sim/engine/parallel_layout.hpp"

#include <fmt/format.h>

#include <map>

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
  return place;
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

std::string first_group_ranks(const ParallelSpec& parallel, int ranks) {
  const int data = ranks / parallel.groups();
  if (parallel.tensor == 1) return data == 1 ? "0" : fmt::format("0-{}", data - 1);
  std::string out;
  for (int d = 0; d < data; ++d) out += (d ? "," : "") + std::to_string(d * parallel.tensor);
  return out;
}

std::vector<SummaryField> parallel_summary_fields(const ParallelSpec& parallel, int ranks) {
  SummaryField layout;
  layout.key = "parallel";
  layout.object = std::vector<std::pair<std::string, double>>{
      {"tensor", parallel.tensor}, {"data", ranks / parallel.groups()}, {"pipeline", parallel.pipeline}};
  return {layout, {"data_parallel_groups", static_cast<double>(parallel.groups())}};
}

}  // namespace aggsim
