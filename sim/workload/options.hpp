#pragma once
// What a scenario can say about training (`workload:`) and about compute (`compute:`), declared as
// ParamSpecs so the scenario loader checks them like any component's, and converted here to plain
// options structs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

enum class ProblemKind { least_squares, logistic, softmax, mlp };

struct WorkloadOptions {
  ProblemKind problem = ProblemKind::softmax;
  int dim = 64;      // input features
  int hidden = 128;  // MLP hidden units
  int classes = 10;  // classes (softmax, mlp) or mixture clusters (least squares); logistic: 2
  int batch = 32;    // samples per rank per step
  double lr = 0.05;
  double momentum = 0.0;
  double weight_decay = 0.0;
  double noniid_alpha = 0.0;  // Dirichlet concentration of each rank's class mix; 0 = IID
  int eval_every = 10;
  int eval_samples = 2048;
  std::optional<double> target_loss;
};

std::vector<ParamSpec> workload_param_specs();
WorkloadOptions workload_options(const Params& params);
const char* problem_name(ProblemKind kind);

// One layer of a modeled network (scenarios/models/*.yaml): its weight matrix shape, its
// parameter count (weights + biases / norms) and its FLOPs per sample.
struct LayerSpec {
  std::string name;
  std::int64_t rows = 0, cols = 1;
  std::int64_t params = 0;
  double forward_flops = 0;   // per sample
  double backward_flops = 0;  // per sample (input and weight gradients)
  bool unstructured = false;  // a model known only by its size: no matrix, one flat run of params
};

// Per-step compute-time noise: the step's compute time is multiplied by exp(sigma * N(0,1))
// (lognormal, median 1) or by 1 + Exp(mean) (exponential), with the given probability per rank
// and step.
enum class StragglerKind { none, lognormal, exponential };

struct StragglerOptions {
  StragglerKind kind = StragglerKind::none;
  double sigma = 0.5;
  double mean = 0.5;
  double probability = 1.0;
};

std::vector<ParamSpec> straggler_param_specs();
StragglerOptions straggler_options(const Params& params);

// Relative speeds of the ranks: an explicit list (one per rank, or one for all), or the rule
// "ranks `slow_ranks` run at `slow_factor`, the others at 1". 0.5 means half speed.
struct SpeedFactors {
  std::vector<double> list;
  std::vector<std::int64_t> slow_ranks;
  double slow_factor = 1.0;
  double of(int rank) const;
};

}  // namespace aggsim
