#include "algorithms/registry.hpp"

namespace aggsim {

// Collectives
AlgorithmInfo ring_allreduce_entry();

// Decentralized
AlgorithmInfo neighbor_averaging_entry();
AlgorithmInfo gossipgrad_entry();

// Compressors
CompressorInfo identity_compressor_entry();

const std::vector<AlgorithmInfo>& algorithm_table() {
  static const std::vector<AlgorithmInfo> table = {
      ring_allreduce_entry(),
      neighbor_averaging_entry(),
      gossipgrad_entry(),
  };
  return table;
}

const std::vector<CompressorInfo>& compressor_table() {
  static const std::vector<CompressorInfo> table = {
      identity_compressor_entry(),
  };
  return table;
}

namespace {
template <class Table>
auto find_in(const Table& table, std::string_view name) -> decltype(&table.front()) {
  for (const auto& entry : table)
    if (entry.name == name) return &entry;
  return nullptr;
}
}  // namespace

const AlgorithmInfo* find_algorithm(std::string_view name) { return find_in(algorithm_table(), name); }
const CompressorInfo* find_compressor(std::string_view name) { return find_in(compressor_table(), name); }

}  // namespace aggsim
