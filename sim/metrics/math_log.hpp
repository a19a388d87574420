#pragma once
// What the math plane did to the vectors, step by step, without a training workload: how far the
// aggregate is from the exact reduction of the ranks' inputs, what compression did to each rank's
// own vector, and how far the ranks are from agreeing. Ranks report their input once per step when
// they have it, and their result when the step is done; a step's figures are computed, and its
// vectors freed, when its last rank has reported both.
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "sim/core/rank_order.hpp"

namespace aggsim {

// Squared norms of one rank's compression error, summed over what it encoded in one step (buckets,
// shards): error_sq = sum ||decode(encode(v)) - v||^2, norm_sq = sum ||v||^2.
struct CompressionTally {
  double error_sq = 0;
  double norm_sq = 0;
  int encodings = 0;
  void add(double e, double n) {
    error_sq += e;
    norm_sq += n;
    ++encodings;
  }
};

// How the exact reduction of the ranks' inputs combines them (the scenario's op): element-wise sum
// divided by `divisor` (sum: 1, avg: contributing ranks, custom_avg: its denominator), min or max.
struct ExactReduction {
  enum class Kind { add, min, max } kind = Kind::add;
  double divisor = 1;
};

// One step's figures (steps.csv columns of the same names).
struct StepMath {
  double agg_error = 0;         // ||mean_r x_r - e|| / ||e||, e the exact reduction (double precision)
  double agg_signed_error = 0;  // <mean_r x_r - e, e> / ||e||^2: averages to 0 for unbiased schemes
  double compress_error = 0;    // mean over compressing ranks of sqrt(error_sq / norm_sq); 0 if none
  double rank_spread = 0;       // max_r ||x_r - mean|| / ||mean||
};

class MathLog {
 public:
  // `contributes[r]`: rank r's input enters the reduction and its result is one of the ranks'
  // (false for a dedicated parameter server, which holds no gradient of its own).
  MathLog(int steps, ExactReduction rule, std::vector<bool> contributes);
  // Rank `rank`'s input of step `step`, before its aggregation: folded into the exact reduction at
  // once when every lower rank's is in (ranks starting a step together mostly report in rank order),
  // else copied until then. So ranks need not keep a copy of their input while they aggregate.
  void report_input(int rank, int step, const Eigen::VectorXf& input);
  // Rank `rank`'s result of step `step`, and what its compressor did (empty tally: none). The
  // result is copied unless it is bit for bit the step's first reported one: after an all-reduce
  // every rank's is, and the log then holds one result a step, not one a rank.
  void report_result(int rank, int step, const Eigen::VectorXf& result, const CompressionTally& compression);
  // Figures of every step all ranks have reported; nullopt for the others (math off).
  std::vector<std::optional<StepMath>> steps() const;

 private:
  using SharedResult = std::shared_ptr<const Eigen::VectorXf>;
  struct Input {
    bool contributes = false;
    const Eigen::VectorXf* borrowed = nullptr;  // the caller's, when folded within report_input
    Eigen::VectorXf copy;                       // else a copy
    const Eigen::VectorXf& values() const { return borrowed ? *borrowed : copy; }
  };
  struct Result {
    SharedResult values;  // a contributing rank's
    CompressionTally compression;
  };
  struct Pending {
    // Both fold in rank order, so sums round the same way in every run.
    InRankOrder<Input> inputs;
    InRankOrder<Result> results_in_order;
    Eigen::VectorXd exact;  // running sum, min or max of the contributing inputs
    SharedResult first;     // the first result reported, shared by the reports equal to it
    // The contributing ranks' results in rank order, as runs of bit-identical vectors (vector,
    // ranks): the mean still adds every rank's in turn.
    std::vector<std::pair<SharedResult, int>> results;
    double compress_sum = 0;
    int compressing = 0;
  };
  Pending& pending(int rank, int step);
  void fold_input(Pending& p, const Input& in) const;
  void fold_result(Pending& p, Result& r) const;
  void complete_if_done(int step, Pending& p);
  void complete(int step, Pending& p);

  ExactReduction rule_;
  std::vector<bool> contributes_;
  int ranks_;
  std::map<int, Pending> pending_;
  std::vector<std::optional<StepMath>> done_;
};

}  // namespace aggsim
