#include "algorithms/memory/error_feedback.hpp"

#include "algorithms/registry.hpp"

namespace aggsim {

Eigen::VectorXf ResidualMemory::compensate(std::uint64_t id,
                                           const Eigen::Ref<const Eigen::VectorXf>& g) const {
  const Eigen::VectorXf* r = residual(id);
  if (r && r->size() == g.size()) return g + *r;
  return g;
}

void ResidualMemory::update(std::uint64_t id, const Eigen::VectorXf& compensated,
                            const Eigen::Ref<const Eigen::VectorXf>& sent) {
  residuals_[id] = compensated - sent;
}

const Eigen::VectorXf* ResidualMemory::residual(std::uint64_t id) const {
  auto it = residuals_.find(id);
  return it == residuals_.end() ? nullptr : &it->second;
}

Payload ErrorFeedback::encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) {
  const Eigen::VectorXf compensated = memory_.compensate(t.id, v);
  Payload p = inner_->compress(compensated, t, rng);
  memory_.update(t.id, compensated, inner_->decompress(p, t));
  return p;
}

Compressor::EncodingError ErrorFeedback::encoding_error(const Eigen::Ref<const Eigen::VectorXf>& /*values*/,
                                                        const Payload& payload, const TensorDesc& t) const {
  const Eigen::VectorXf* residual = memory_.residual(t.id);
  if (!residual) return {};
  const Eigen::VectorXd r = residual->cast<double>();
  const Eigen::VectorXd compensated = inner_->decompress(payload, t).cast<double>() + r;
  return {r.squaredNorm(), compensated.squaredNorm()};
}

// Every compressor but `none` accepts `error_feedback`; the factory wraps when it is true.
CompressorInfo with_error_feedback(CompressorInfo info) {
  if (info.name == "none") return info;
  info.params.push_back(ParamSpec("error_feedback", ParamKind::boolean, "false",
                                  "add the residual of earlier steps before compressing (per rank)"));
  info.make = [make = info.make](const Params& p) -> std::unique_ptr<Compressor> {
    auto inner = make(p);
    if (p.boolean("error_feedback")) return std::make_unique<ErrorFeedback>(std::move(inner));
    return inner;
  };
  return info;
}

}  // namespace aggsim
