#pragma once
// PowerSGD's rank-r power iteration step on one rank's matrix, shared by the compressor (used on
// all-gather and parameter-server transports) and PowerSGD's own aggregation (all-reduce of P, then Q).
#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "sim/core/params.hpp"
#include "sim/core/random.hpp"

namespace aggsim {

struct PowerSgdOptions {
  std::int64_t rank = 2;
  bool reuse_query = true;  // warm start: begin each step from the previous step's Q
};

// The compressor's parameters `rank` and `reuse_query`.
PowerSgdOptions powersgd_options(const Params& params);

// The query matrices Q (n x r) per tensor, for warm starts: per gradient `id` and proxy tensor
// `piece` within it (LowRankPiece index).
class QueryStore {
 public:
  explicit QueryStore(PowerSgdOptions options) : options_(options) {}
  // The tensor's Q: the previous one when warm starting, else fresh standard normal draws from `rng`.
  Eigen::MatrixXf start(std::uint64_t id, std::size_t piece, Eigen::Index n, Rng& rng);
  void keep(std::uint64_t id, std::size_t piece, const Eigen::MatrixXf& q);
  const PowerSgdOptions& options() const { return options_; }

 private:
  PowerSgdOptions options_;
  std::map<std::pair<std::uint64_t, std::size_t>, Eigen::MatrixXf> queries_;
};

}  // namespace aggsim
