// PowerSGD aggregation (Vogels et al. 2019, Algorithm 1; mlbench-core's PowerAggregation) on any
// reducing collective. As PyTorch's PowerSGD hook and mlbench do, every matrix tensor M_i of the
// rank's gradient (plus its error-feedback residual) is factored on its own, with a query Q_i
// shared by all ranks (the same seed on the first step, afterwards the previous step's all-reduced
// Q_i when `reuse_query`):
//   P_i = allreduce(M_i Q_i);  orthogonalise each P_i;  Q_i = allreduce(M_i^T P_i);  result P_i Q_i^T
// with all P_i in one all-reduce and all Q_i in the next, so every rank ends with the same rank-r
// approximation of each reduced tensor. 1-D tensors and matrices whose factors are no smaller
// (low_rank_pays) ride the all-reduce of P dense (the hook all-reduces them uncompressed). One rule
// decides on both planes: on the wire each modeled m_i x n_i matrix that pays adds m_i r values to
// P and n_i r to Q; in the math each proxy tensor (Gradient::proxy_layout) is factored or sent
// dense by the same rule. A proxy without tensor structure (a synthetic flat vector) is one
// near-square matrix, factored. The memory (error feedback, `memory: residual`) keeps, per tensor,
// M_i - P_i Qbar_i^T with the all-reduced mean query Qbar_i, as mlbench's PowerAggregation and
// PyTorch's hook do (each rank's share of the result is the mean); the tensors sent dense leave
// no residual (PyTorch's hook would keep own - mean for them).
// A bucket with nothing to factor on the wire goes through the collective dense; if its proxy has
// matrices, their approximation is computed from the reduced sum (PowerSGD is linear: the two
// all-reduces would give the same P_i and Q_i), so the math does not depend on the bucketing.
#include "algorithms/transport/power_aggregation.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "algorithms/compression/low_rank.hpp"
#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"

namespace aggsim {
namespace {

class PowerAggregation final : public Aggregator {
 public:
  PowerAggregation(std::unique_ptr<Aggregator> collective, const ReduceOp& op, PowerSgdOptions options,
                   std::unique_ptr<Memory> memory)
      : collective_(std::move(collective)), op_(op), queries_(options), memory_(std::move(memory)) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const TensorDesc t = TensorDesc::of(grad);
    const std::int64_t r = queries_.options().rank;
    const LowRankWire wire = low_rank_wire(t.wire, r);
    std::vector<LowRankPiece> pieces = low_rank_pieces(t.proxy, t.proxy_layout, r);
    // Without tensor structure the proxy is one matrix, factored whenever the wire has factors.
    if (t.proxy_layout.pieces.empty() && !pieces.empty()) pieces.front().factored = wire.rows > 0;
    const bool factors =
        std::any_of(pieces.begin(), pieces.end(), [](const LowRankPiece& p) { return p.factored; });
    if (wire.rows == 0 && !factors) {
      collective_->aggregate(ctx, grad);
      return;
    }
    const bool math = grad.values.size() > 0;
    const Eigen::VectorXf compensated = !math     ? Eigen::VectorXf()
                                        : memory_ ? memory_->compensate(t.id, grad.values)
                                                  : grad.values;
    if (wire.rows == 0) {
      reduce_dense(ctx, grad, t, pieces, compensated);
      return;
    }
    // Products over every factored piece: 2 r sum m_i n_i flops (and 2 r^2 sum m_i to orthogonalise).
    const double product = 2.0 * static_cast<double>(r) * wire.area;
    std::vector<Factors> f = start_factors(ctx, t, pieces, compensated);
    ctx.compute(product, "compress");
    // P: every factored tensor's M_i Q_i, then the tensors sent dense (they ride with P).
    Eigen::VectorXf sent =
        pack(pieces, f, compensated, [](const Factors& x) { return Eigen::MatrixXf(x.m * x.q); });
    all_reduce(ctx, sent, static_cast<std::uint64_t>(wire.rows * r + wire.dense));
    ctx.compute(matmul_flops(wire.rows, r, r) + product, "compress");
    Eigen::VectorXf result = math ? unpack_p(pieces, f, sent) : Eigen::VectorXf();
    for (Factors& x : f) {
      orthogonalize(x.p);
      x.q.noalias() = x.m.transpose() * x.p;
    }
    if (math) measure_own_error(ctx, pieces, f, compensated);
    Eigen::VectorXf qs = pack(
        pieces, f, compensated, [](const Factors& x) { return x.q; }, false);
    all_reduce(ctx, qs, static_cast<std::uint64_t>(wire.cols * r));
    ctx.compute(product, "decompress");
    if (memory_) ctx.compute(memory_->flops_per_value() * static_cast<double>(t.wire.size()), "compress");
    if (!math) return;
    Eigen::Index at = 0;
    for (std::size_t i = 0, k = 0; i < pieces.size(); ++i) {
      if (!pieces[i].factored) continue;
      Factors& x = f[k++];
      x.q = Eigen::Map<const Eigen::MatrixXf>(qs.data() + at, x.q.rows(), r);
      at += x.q.size();
      queries_.keep(t.id, i, x.q);
      result.segment(pieces[i].offset, pieces[i].count) = from_matrix(x.p * x.q.transpose(), pieces[i].count);
    }
    remember(ctx, t, pieces, compensated, result);
    grad.values = std::move(result);
  }

 private:
  // One factored proxy tensor: its matrix M_i (compensated), P_i and Q_i.
  struct Factors {
    Eigen::MatrixXf m, p, q;
  };

  // M_i and the starting Q_i of each factored tensor, in order (queries drawn from the shared stream).
  std::vector<Factors> start_factors(RankContext& ctx, const TensorDesc& t,
                                     const std::vector<LowRankPiece>& pieces,
                                     const Eigen::VectorXf& compensated) {
    std::vector<Factors> f;
    Rng shared = ctx.shared_rng(Stream::compression, t.id);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const LowRankPiece& piece = pieces[i];
      if (!piece.factored) continue;
      f.push_back({to_matrix(compensated.segment(piece.offset, piece.count), piece.view), Eigen::MatrixXf(),
                   queries_.start(t.id, i, piece.view.cols, shared)});
    }
    return f;
  }

  // The factored tensors' `factor(x)` one after another, then (with `dense`) the values of the
  // tensors sent dense: one flat vector for the collective.
  template <class F>
  static Eigen::VectorXf pack(const std::vector<LowRankPiece>& pieces, const std::vector<Factors>& f,
                              const Eigen::VectorXf& compensated, F factor, bool dense = true) {
    std::vector<Eigen::MatrixXf> parts;
    Eigen::Index size = 0;
    for (const Factors& x : f) {
      parts.push_back(factor(x));
      size += parts.back().size();
    }
    if (dense)
      for (const LowRankPiece& piece : pieces)
        if (!piece.factored) size += piece.count;
    Eigen::VectorXf out(size);
    Eigen::Index at = 0;
    for (const Eigen::MatrixXf& part : parts) {
      out.segment(at, part.size()) = Eigen::Map<const Eigen::VectorXf>(part.data(), part.size());
      at += part.size();
    }
    if (dense)
      for (const LowRankPiece& piece : pieces)
        if (!piece.factored) {
          out.segment(at, piece.count) = compensated.segment(piece.offset, piece.count);
          at += piece.count;
        }
    return out;
  }

  // Reads the reduced P_i back into `f` and returns the result vector with the dense tensors
  // already in place (the factored ones are filled once Q is reduced).
  static Eigen::VectorXf unpack_p(const std::vector<LowRankPiece>& pieces, std::vector<Factors>& f,
                                  const Eigen::VectorXf& reduced) {
    Eigen::VectorXf result = Eigen::VectorXf::Zero(pieces.back().offset + pieces.back().count);
    Eigen::Index at = 0;
    for (std::size_t i = 0, k = 0; i < pieces.size(); ++i) {
      if (!pieces[i].factored) continue;
      Factors& x = f[k++];
      x.p = Eigen::Map<const Eigen::MatrixXf>(reduced.data() + at, x.m.rows(), x.q.cols());
      at += x.p.size();
    }
    for (const LowRankPiece& piece : pieces)
      if (!piece.factored) {
        result.segment(piece.offset, piece.count) = reduced.segment(at, piece.count);
        at += piece.count;
      }
    return result;
  }

  // compress_error: how far this rank's own tensors in the shared subspaces, P_i Q_i'^T with its
  // own Q_i' = M_i^T P_i, are from M_i (compensated); the dense ones are sent exactly.
  static void measure_own_error(RankContext& ctx, const std::vector<LowRankPiece>& pieces,
                                const std::vector<Factors>& f, const Eigen::VectorXf& compensated) {
    if (!ctx.compression) return;
    double error_sq = 0, norm_sq = 0;
    for (std::size_t i = 0, k = 0; i < pieces.size(); ++i) {
      const LowRankPiece& piece = pieces[i];
      if (!piece.factored) {
        norm_sq += compensated.segment(piece.offset, piece.count).cast<double>().squaredNorm();
        continue;
      }
      const Factors& x = f[k++];
      const Eigen::MatrixXd md = x.m.cast<double>();
      error_sq += (md - (x.p * x.q.transpose()).cast<double>()).squaredNorm();
      norm_sq += md.squaredNorm();
    }
    ctx.compression->add(error_sq, norm_sq);
  }

  // Error feedback: this rank's share of the result is the mean over ranks, P_i Qbar_i^T for each
  // factored tensor (`result` holds them reduced with the scenario's op); dense tensors went out
  // exactly.
  void remember(const RankContext& ctx, const TensorDesc& t, const std::vector<LowRankPiece>& pieces,
                const Eigen::VectorXf& compensated, const Eigen::VectorXf& result) {
    if (!memory_) return;
    const double to_mean = op_.kind == ReduceKind::sum          ? 1.0 / ctx.world
                           : op_.kind == ReduceKind::custom_avg ? op_.denominator / ctx.world
                                                                : 1.0;
    Eigen::VectorXf sent = compensated;
    for (const LowRankPiece& piece : pieces)
      if (piece.factored)
        sent.segment(piece.offset, piece.count) =
            result.segment(piece.offset, piece.count) * static_cast<float>(to_mean);
    memory_->update(t.id, compensated, sent);
  }

  // Nothing factored on the wire: one dense all-reduce of the (compensated) values, then each proxy
  // matrix's approximation from the reduced tensor R_i, which is what the two all-reduces give:
  // P_i = R_i Q_i, Q_i = R_i^T P_i (PowerSGD is linear); the memory keeps M_i - P_i Qbar_i^T as above.
  void reduce_dense(RankContext& ctx, Gradient& grad, const TensorDesc& t,
                    const std::vector<LowRankPiece>& pieces, const Eigen::VectorXf& compensated) {
    grad.values = compensated;
    collective_->aggregate(ctx, grad);
    if (grad.values.size() == 0) return;
    std::vector<Factors> f = start_factors(ctx, t, pieces, compensated);
    for (std::size_t i = 0, k = 0; i < pieces.size(); ++i) {
      if (!pieces[i].factored) continue;
      Factors& x = f[k++];
      const Eigen::MatrixXf reduced =
          to_matrix(grad.values.segment(pieces[i].offset, pieces[i].count), pieces[i].view);
      x.p = reduced * x.q;
      orthogonalize(x.p);
      x.q.noalias() = x.m.transpose() * x.p;
      const Eigen::MatrixXf q = reduced.transpose() * x.p;
      queries_.keep(t.id, i, q);
      grad.values.segment(pieces[i].offset, pieces[i].count) =
          from_matrix(x.p * q.transpose(), pieces[i].count);
    }
    measure_own_error(ctx, pieces, f, compensated);
    remember(ctx, t, pieces, compensated, grad.values);
  }

  // All-reduces a flat vector of factors through the collective (with the scenario's op).
  void all_reduce(RankContext& ctx, Eigen::VectorXf& values, std::uint64_t wire_elements) {
    Gradient g = flat_gradient(values, wire_elements);
    collective_->aggregate(ctx, g);
    values = std::move(g.values);
  }

  std::unique_ptr<Aggregator> collective_;
  ReduceOp op_;
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
  return std::make_unique<PowerAggregation>(std::move(collective), op, options, std::move(memory));
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
