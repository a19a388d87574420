#pragma once
// MSCCL programs run on the simulated ranks, as the MSCCL runtime runs them (schedule + movement,
// DESIGN "Collectives as schedule + movement"). Per call every rank runs its GPU's threadblocks, each
// a SimGrid actor on the rank's host: for each loop iteration (the runtime cuts each of the
// program's chunks into pieces of NCCL's ring chunk size and runs every step once per piece), each
// threadblock runs its steps in order, first waiting for its dependency. A transfer step moves its
// chunks in calls of at most the runtime's maxAllowedCount chunks, each call in the protocol's
// slices; a connection (sender, receiver, channel) holds at most the runtime's slots, so a sender
// blocks while they are full. Each slice is a SimGrid message of its data bytes divided by the
// protocol's efficiency; it is usable the route's latency plus the protocol's per-hop latency (of
// the class of link it crosses: NVLink, PCIe or the network) after its bytes arrived, and a call
// starts after the protocol's base latency (ProtocolCosts, the same model as nccl_allreduce).
//
// The real data moves with the first piece: the first loop iteration carries the whole chunks'
// proxy values and reduces them with the scenario's op (every iteration applies the same steps to
// its own part of each chunk, so the result is the same); avg and custom_avg divide once, at the
// end. An all-gather program gathers every rank's vector, which each rank then reduces in rank order.
#include <cstdint>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/msccl/program.hpp"
#include "algorithms/nccl/nccl_view.hpp"
#include "algorithms/nccl/protocol.hpp"
#include "algorithms/registry.hpp"
#include "sim/api/aggregator.hpp"

namespace aggsim {

class MscclExecutor {
 public:
  // `programs`: the scenario's, in selection order (checked, all for `hosts.size()` GPUs).
  MscclExecutor(std::vector<std::shared_ptr<const MscclProgram>> programs,
                const std::vector<sg4::Host*>& hosts, ProtocolCosts costs);
  ~MscclExecutor();

  // The program a call of `total_bytes` runs (the runtime's nBytes): the first whose
  // [minBytes, maxBytes] holds it.
  const MscclProgram& select(double total_bytes) const;

  // Rank `ctx.rank`'s part of one call: `grad` holds its input and ends with the reduction.
  void run(RankContext& ctx, Gradient& grad, const ReduceOp& op);

  // For summary.json: the programs, steps executed, wire bytes per connection.
  std::vector<SummaryField> summary() const;

 private:
  struct Link;
  struct RankCall;
  Link& link(const MscclProgram& prog, std::uint64_t call, int from, int to, int channel);
  void leave_link(std::uint64_t call, int from, int to, int channel);
  double arrival_delay(int from, int to, Protocol proto);
  void run_threadblock(RankCall& call, const MscclThreadblock& tb);

  std::vector<std::shared_ptr<const MscclProgram>> programs_;
  NcclView view_;
  ProtocolCosts costs_;
  std::vector<std::uint64_t> calls_made_;  // per rank
  std::map<std::tuple<std::uint64_t, int, int, int>, std::unique_ptr<Link>> links_;
  std::map<std::pair<int, int>, double> route_latency_;
  std::map<std::tuple<int, int, int>, double> bytes_;   // wire bytes per (sender, receiver, channel)
  std::map<std::string, std::uint64_t> program_calls_;  // per program name, counted on rank 0
  std::uint64_t steps_executed_ = 0;
};

}  // namespace aggsim
