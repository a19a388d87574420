#include "sim/workload/options.hpp"

#include <algorithm>

namespace aggsim {

const char* problem_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::least_squares:
      return "least_squares";
    case ProblemKind::logistic:
      return "logistic";
    case ProblemKind::softmax:
      return "softmax";
    case ProblemKind::mlp:
      return "mlp";
  }
  return "?";
}

std::vector<ParamSpec> workload_param_specs() {
  return {
      ParamSpec("problem", ParamKind::choice, "", "proxy training problem")
          .one_of({"least_squares", "logistic", "softmax", "mlp"})
          .needed(),
      ParamSpec("dim", ParamKind::integer, "64", "input features").between(1, 1 << 20),
      ParamSpec("hidden", ParamKind::integer, "128", "hidden units of the mlp").between(1, 1 << 16),
      ParamSpec("classes", ParamKind::integer, "10", "classes (softmax, mlp) or clusters (least_squares)")
          .between(2, 1 << 12),
      ParamSpec("batch", ParamKind::integer, "32", "samples per rank per step").between(1, 1 << 20),
      ParamSpec("lr", ParamKind::real, "0.05", "learning rate").between(0, 1e6),
      ParamSpec("momentum", ParamKind::real, "0", "heavy-ball momentum (PyTorch SGD)").between(0, 0.9999),
      ParamSpec("weight_decay", ParamKind::real, "0", "L2 penalty added to the gradient").between(0, 1e3),
      ParamSpec("noniid_alpha", ParamKind::real, "0",
                "Dirichlet concentration of each rank's class mix; 0 = IID shards")
          .between(0, 1e6),
      ParamSpec("eval_every", ParamKind::integer, "10", "evaluate the averaged model every N steps")
          .between(1, 1e9),
      ParamSpec("eval_samples", ParamKind::integer, "2048", "held-out samples").between(1, 1 << 24),
      ParamSpec("target_loss", ParamKind::real, "",
                "held-out loss whose first crossing gives time_to_target_s")
          .between(-1e300, 1e300),
  };
}

WorkloadOptions workload_options(const Params& p) {
  WorkloadOptions o;
  const std::string& name = p.text("problem");
  for (auto k : {ProblemKind::least_squares, ProblemKind::logistic, ProblemKind::softmax, ProblemKind::mlp})
    if (name == problem_name(k)) o.problem = k;
  o.dim = static_cast<int>(p.integer("dim"));
  o.hidden = static_cast<int>(p.integer("hidden"));
  o.classes = o.problem == ProblemKind::logistic ? 2 : static_cast<int>(p.integer("classes"));
  o.batch = static_cast<int>(p.integer("batch"));
  o.lr = p.real("lr");
  o.momentum = p.real("momentum");
  o.weight_decay = p.real("weight_decay");
  o.noniid_alpha = p.real("noniid_alpha");
  o.eval_every = static_cast<int>(p.integer("eval_every"));
  o.eval_samples = static_cast<int>(p.integer("eval_samples"));
  if (p.has("target_loss")) o.target_loss = p.real("target_loss");
  return o;
}

std::vector<ParamSpec> straggler_param_specs() {
  return {
      ParamSpec("distribution", ParamKind::choice, "none", "compute-time multiplier per rank and step")
          .one_of({"none", "lognormal", "exponential"}),
      ParamSpec("sigma", ParamKind::real, "0.5", "lognormal: multiplier exp(sigma * N(0,1))").between(0, 10),
      ParamSpec("mean", ParamKind::real, "0.5", "exponential: multiplier 1 + Exp(mean)").between(0, 1e6),
      ParamSpec("probability", ParamKind::real, "1", "chance that a rank's step is perturbed").between(0, 1),
  };
}

StragglerOptions straggler_options(const Params& p) {
  StragglerOptions o;
  const std::string& d = p.text("distribution");
  o.kind = d == "lognormal"     ? StragglerKind::lognormal
           : d == "exponential" ? StragglerKind::exponential
                                : StragglerKind::none;
  o.sigma = p.real("sigma");
  o.mean = p.real("mean");
  o.probability = p.real("probability");
  return o;
}

double SpeedFactors::of(int rank) const {
  if (!list.empty()) return list.size() == 1 ? list[0] : list[static_cast<std::size_t>(rank)];
  return std::find(slow_ranks.begin(), slow_ranks.end(), rank) != slow_ranks.end() ? slow_factor : 1.0;
}

}  // namespace aggsim
