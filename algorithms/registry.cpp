#include "algorithms/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "sim/core/params.hpp"

namespace aggsim {

// Collectives
AlgorithmInfo ring_allreduce_entry();
AlgorithmInfo halving_doubling_allreduce_entry();
AlgorithmInfo recursive_doubling_allreduce_entry();
AlgorithmInfo tree_allreduce_entry();
AlgorithmInfo double_binary_tree_allreduce_entry();
AlgorithmInfo hierarchical_allreduce_entry();
AlgorithmInfo torus2d_allreduce_entry();
AlgorithmInfo nccl_allreduce_entry();
AlgorithmInfo msccl_entry();
AlgorithmInfo allgather_entry();
AlgorithmInfo fsdp_entry();
// Centralized
AlgorithmInfo parameter_server_entry();

// Decentralized
AlgorithmInfo neighbor_averaging_entry();
AlgorithmInfo gossipgrad_entry();

// Compressors
CompressorInfo identity_compressor_entry();
CompressorInfo topk_compressor_entry();
CompressorInfo randomk_compressor_entry();
CompressorInfo threshold_compressor_entry();
CompressorInfo qsgd_compressor_entry();
CompressorInfo terngrad_compressor_entry();
CompressorInfo sign_compressor_entry();
CompressorInfo fp16_compressor_entry();
CompressorInfo uint8_compressor_entry();
CompressorInfo powersgd_compressor_entry();
CompressorInfo atomo_compressor_entry();
// Adds the `memory` and `error_feedback` keys to a compressor (memory/compressor_with_memory.cpp).
CompressorInfo with_memory(CompressorInfo info);

// Memories of what compression did not send
MemoryInfo residual_memory_entry();

// Transports of compressed payloads
TransportInfo compressed_reduction_transport();
TransportInfo powersgd_aggregation_transport();

const std::vector<AlgorithmInfo>& algorithm_table() {
  static const std::vector<AlgorithmInfo> table = {
      ring_allreduce_entry(),
      halving_doubling_allreduce_entry(),
      recursive_doubling_allreduce_entry(),
      tree_allreduce_entry(),
      double_binary_tree_allreduce_entry(),
      hierarchical_allreduce_entry(),
      torus2d_allreduce_entry(),
      nccl_allreduce_entry(),
      msccl_entry(),
      allgather_entry(),
      fsdp_entry(),
      parameter_server_entry(),
      neighbor_averaging_entry(),
      gossipgrad_entry(),
  };
  return table;
}

const std::vector<CompressorInfo>& compressor_table() {
  static const std::vector<CompressorInfo> table = [] {
    std::vector<CompressorInfo> rows = {
        identity_compressor_entry(),  topk_compressor_entry(),  randomk_compressor_entry(),
        threshold_compressor_entry(), qsgd_compressor_entry(),  terngrad_compressor_entry(),
        sign_compressor_entry(),      fp16_compressor_entry(),  uint8_compressor_entry(),
        powersgd_compressor_entry(),  atomo_compressor_entry(),
    };
    for (auto& row : rows) row = with_memory(std::move(row));
    return rows;
  }();
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

CallIdentity call_identity(const AlgorithmInfo& algorithm, const Params& params) {
  if (algorithm.call_identity) return algorithm.call_identity(params);
  return {algorithm.collective, algorithm.name, algorithm.per_rank_bytes};
}

double log2_rounds(int ranks) {
  return std::max(1.0, std::ceil(std::log2(std::max(2.0, static_cast<double>(ranks)))));
}

const AlgorithmInfo* find_algorithm(std::string_view name) {
  return find_in(algorithm_table(), name);
}
const CompressorInfo* find_compressor(std::string_view name) {
  return find_in(compressor_table(), name);
}
const MemoryInfo* find_memory(std::string_view name) {
  return find_in(memory_table(), name);
}

const std::vector<MemoryInfo>& memory_table() {
  static const std::vector<MemoryInfo> table = {
      {"none", "nothing is kept: each step compresses its own gradient", [] { return nullptr; }},
      residual_memory_entry(),
  };
  return table;
}

const std::vector<TransportInfo>& transport_table() {
  static const std::vector<TransportInfo> table = {
      {"dense", "no compression: the algorithm sends fp32 gradients"},
      {"algorithm",
       "the algorithm compresses and decodes the payloads itself (all-gather, parameter server, fsdp)"},
      compressed_reduction_transport(),
      powersgd_aggregation_transport(),
  };
  return table;
}

const TransportInfo& transport_for(const AlgorithmInfo& algorithm, const CompressorInfo& compressor) {
  const std::string_view name = !algorithm.reduces_in_flight   ? "algorithm"
                                : compressor.name == "none"   ? "dense"
                                : algorithm.compresses_itself ? "algorithm"
                                                              : std::string_view(compressor.reducing_transport);
  const TransportInfo* transport = find_in(transport_table(), name);
  if (!transport)
    throw std::logic_error(fmt::format("compressor {}: no transport '{}'", compressor.name, name));
  return *transport;
}

std::unique_ptr<Compressor> AlgorithmConfig::make_compressor() const {
  return compressor ? compressor->make(compressor_params) : find_compressor("none")->make({});
}

AlgorithmRun independent_ranks(const AlgorithmConfig& config,
                               std::function<std::unique_ptr<Aggregator>(const AlgorithmConfig&)> make) {
  AlgorithmRun run;
  run.make_aggregator = [config, make = std::move(make)] { return make(config); };
  run.replay_refusal = "";
  return run;
}

bool same_inputs(const AlgorithmConfig& a, const AlgorithmConfig& b) {
  return a.algorithm == b.algorithm && a.op.kind == b.op.kind && a.op.denominator == b.op.denominator &&
         a.params.all() == b.params.all() && a.world == b.world && same_calibration(a.calibration, b.calibration) &&
         a.math == b.math && a.model_bytes == b.model_bytes && a.seed == b.seed && a.compressor == b.compressor &&
         a.compressor_params.all() == b.compressor_params.all();
}

namespace {
std::atomic<long> prepares{0};
}  // namespace

AlgorithmRun prepare_run(const AlgorithmConfig& config) {
  ++prepares;
  return config.algorithm->prepare(config);
}

long algorithm_prepares() {
  return prepares.load();
}

std::optional<AlgorithmRun> PreparedAtLoad::take_for(const AlgorithmConfig& wanted) {
  if (config.reads_platform()) run.reset();  // never stands for a run on the platform: let it go
  if (!run || !same_inputs(config, wanted)) return std::nullopt;
  std::optional<AlgorithmRun> taken = std::move(run);
  run.reset();
  return taken;
}

std::unique_ptr<Aggregator> make_aggregator(const AlgorithmRun& run, const TransportInfo& transport,
                                            const AlgorithmConfig& config) {
  auto aggregator = run.make_aggregator();
  return transport.wrap ? transport.wrap(std::move(aggregator), config) : std::move(aggregator);
}

}  // namespace aggsim
