// 2D-torus all-reduce, ring per dimension: ranks form a rows x cols grid (rank = row * cols + col);
// ring reduce-scatter along each row (cols members), ring all-reduce of the owned S/cols shard along
// each column (rows members), ring all-gather along the row. Every rank uses one send and one
// receive at a time, so under alpha-beta on a flat network:
//   2 (cols-1) (alpha + S/cols beta) + 2 (rows-1) (alpha + S/p beta).
// `rows` defaults to the most square factorisation (the largest divisor of p <= sqrt(p)).
// Assumes a commutative, associative op.
//
// SMPI: no equivalent (its allreduce:smp_rsag* are two-level by node, not by a logical grid).
#include <fmt/format.h>

#include <cmath>

#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

namespace {

int most_square_rows(int p) {
  int rows = 1;
  for (int d = 1; d * d <= p; ++d)
    if (p % d == 0) rows = d;
  return rows;
}

class Torus2dAllreduce final : public Aggregator {
 public:
  Torus2dAllreduce(ReduceOp op, int rows) : op_(op), rows_(rows) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const int cols = ctx.world / rows_, row = ctx.rank / cols, col = ctx.rank % cols;
    const Group along_row = Group::strided(row * cols, 1, cols, col);
    const Group along_col = Group::strided(col, cols, rows_, row);
    two_level_allreduce(*ctx.comm, along_row, along_col, grad, op_, ctx.world, ring_allreduce);
  }

 private:
  ReduceOp op_;
  int rows_;
};

}  // namespace

AlgorithmInfo torus2d_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "torus2d_allreduce";
  info.messages_per_rank_step = [](int p) { return 4 * std::sqrt(static_cast<double>(p)); };
  info.summary = "2D torus (ring per dimension): row reduce-scatter, column all-reduce, row all-gather";
  info.params = {ParamSpec("rows", ParamKind::integer, "",
                           "grid rows, must divide the rank count (default: most square)")
                     .between(1, 1 << 22)};
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    const int rows =
        cfg.params.has("rows") ? static_cast<int>(cfg.params.integer("rows")) : most_square_rows(cfg.world);
    if (cfg.world % rows != 0)
      throw ParamError(
          "rows", fmt::format("torus2d_allreduce: rows {} does not divide the {} ranks", rows, cfg.world));
    const ReduceOp op = cfg.op;
    AlgorithmRun run{[op, rows] { return std::make_unique<Torus2dAllreduce>(op, rows); }};
    run.replay_refusal = "";
    return run;
  };
  return info;
}

}  // namespace aggsim
