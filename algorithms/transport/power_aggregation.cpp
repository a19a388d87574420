// PowerSGD aggregation (Vogels et al. 2019, Algorithm 1; mlbench-core's PowerAggregation) on any
// reducing collective. Each rank views its gradient (plus its error-feedback residual) as an m x n
// matrix M_i; with a query Q shared by all ranks (the same seed on the first step, afterwards the
// previous step's all-reduced Q when `reuse_query`):
//   P = allreduce(M_i Q);  orthogonalise P;  Q = allreduce(M_i^T P);  result = P Q^T
// so every rank ends with the same rank-r approximation of the reduced gradient. Two all-reduces
// of m r and n r fp32 values replace one of m n. The memory (error feedback, `memory: residual`) keeps
// M_i - P Q_i^T with the rank's own Q_i, as in the reference implementation. On the wire, each
// modeled m_i x n_i matrix of the bucket adds m_i r values to P and n_i r to Q; its 1-D vectors and
// the matrices where factors are no smaller than the matrix travel dense alongside P (PyTorch's
// PowerSGD hook all-reduces them uncompressed); a bucket with nothing to factor goes through the
// collective dense. The math runs on the proxy viewed as one matrix.
#include "algorithms/transport/power_aggregation.hpp"

#include <stdexcept>

#include "algorithms/compression/low_rank.hpp"
#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"

namespace aggsim {
namespace {

class PowerAggregation final : public Aggregator {
 public:
  PowerAggregation(std::unique_ptr<Aggregator> collective, PowerSgdOptions options,
                   std::unique_ptr<Memory> memory)
      : collective_(std::move(collective)), queries_(options), memory_(std::move(memory)) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const TensorDesc t = TensorDesc::of(grad);
    const Shape view = matrix_view(t.proxy);
    const std::int64_t r = queries_.options().rank;
    const LowRankWire wire = low_rank_wire(t.wire, r);
    if (wire.rows == 0) {
      collective_->aggregate(ctx, grad);
      return;
    }
    // Products over every factored piece: 2 r sum m_i n_i flops (and 2 r^2 sum m_i to orthogonalise).
    const double product = 2.0 * static_cast<double>(r) * wire.area;
    const bool math = grad.values.size() > 0;
    Eigen::VectorXf compensated = !math     ? Eigen::VectorXf()
                                  : memory_ ? memory_->compensate(t.id, grad.values)
                                            : grad.values;
    const Eigen::MatrixXf m = math ? to_matrix(compensated, view) : Eigen::MatrixXf();
    Rng shared = ctx.shared_rng(Stream::compression, t.id);
    Eigen::MatrixXf q = math ? queries_.start(t.id, view.cols, shared) : Eigen::MatrixXf();
    ctx.compute(product, "compress");
    Eigen::MatrixXf p = math ? Eigen::MatrixXf(m * q) : Eigen::MatrixXf();
    // The pieces sent dense (vectors, small matrices) ride with P.
    all_reduce(ctx, p, view.rows, static_cast<std::uint64_t>(wire.rows * r + wire.dense));
    ctx.compute(matmul_flops(wire.rows, r, r) + product, "compress");
    if (math) {
      orthogonalize(p);
      q.noalias() = m.transpose() * p;
      // This rank's own matrix in the shared subspace: P Q_i^T against M_i (compensated).
      if (ctx.compression) {
        const Eigen::MatrixXd md = m.cast<double>();
        ctx.compression->add((md - (p * q.transpose()).cast<double>()).squaredNorm(), md.squaredNorm());
      }
    }
    if (memory_) {
      ctx.compute(product, "compress");
      if (math) memory_->update(t.id, compensated, from_matrix(p * q.transpose(), grad.values.size()));
    }
    all_reduce(ctx, q, view.cols, static_cast<std::uint64_t>(wire.cols * r));
    if (math) queries_.keep(t.id, q);
    ctx.compute(product, "decompress");
    if (math) grad.values = from_matrix(p * q.transpose(), grad.values.size());
  }

 private:
  // All-reduces a factor through the collective (with the scenario's op) as a flat gradient.
  void all_reduce(RankContext& ctx, Eigen::MatrixXf& factor, Eigen::Index rows, std::uint64_t wire_elements) {
    Gradient g =
        flat_gradient(Eigen::Map<const Eigen::VectorXf>(factor.data(), factor.size()), wire_elements);
    collective_->aggregate(ctx, g);
    if (g.values.size() > 0)
      factor = Eigen::Map<const Eigen::MatrixXf>(g.values.data(), rows, g.values.size() / rows);
  }

  std::unique_ptr<Aggregator> collective_;
  QueryStore queries_;
  std::unique_ptr<Memory> memory_;  // null: memory none
};

}  // namespace

std::unique_ptr<Aggregator> make_power_aggregation(std::unique_ptr<Aggregator> collective, const ReduceOp& op,
                                                   PowerSgdOptions options, std::unique_ptr<Memory> memory) {
  if (!op.adds())
    throw InputError(std::string("powersgd on a reducing collective needs algorithm op sum, avg or "
                                 "custom_avg (PowerSGD is linear); got ") +
                     reduce_kind_name(op.kind));
  return std::make_unique<PowerAggregation>(std::move(collective), options, std::move(memory));
}

TransportInfo powersgd_aggregation_transport() {
  TransportInfo transport;
  transport.name = "powersgd_aggregation";
  transport.summary = "PowerSGD's own aggregation: all-reduce P, orthogonalise, all-reduce Q";
  transport.check = [](const AlgorithmConfig& cfg) {
    if (!cfg.op.adds())
      throw ParamError("compression",
                       std::string("powersgd on a reducing collective needs algorithm op sum, avg or "
                                   "custom_avg (PowerSGD is linear); got ") +
                           reduce_kind_name(cfg.op.kind));
  };
  transport.wrap = [](std::unique_ptr<Aggregator> collective, const AlgorithmConfig& cfg) {
    const Params& p = cfg.compressor_params;
    return make_power_aggregation(std::move(collective), cfg.op, powersgd_options(p), memory_for(p).make());
  };
  return transport;
}

}  // namespace aggsim
