// Threshold sparsification (Strom 2015; GRACE's `threshold`): keep the values with |v| >= tau, as
// (uint32 index, fp32 value) pairs. The kept count depends on the data, so the wire size is the
// proxy's kept fraction applied to the modeled tensor (exact when the shapes coincide), and
// encoded_bytes() is the upper bound (everything kept). Biased, not summable.
#include <cmath>

#include "algorithms/compression/sparse.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class Threshold final : public Compressor {
 public:
  explicit Threshold(float tau) : tau_(tau) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return static_cast<std::uint64_t>(piece.shape.size()) * kSparseEntryBytes;
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return false; }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    Payload p;
    std::vector<float> kept;
    for (Eigen::Index i = 0; i < v.size(); ++i) {
      if (std::abs(v[i]) >= tau_) {
        p.indices.push_back(static_cast<std::uint32_t>(i));
        kept.push_back(v[i]);
      }
    }
    p.values = Eigen::Map<const Eigen::VectorXf>(kept.data(), static_cast<Eigen::Index>(kept.size()));
    const auto wire_kept = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(kept.size()) * static_cast<double>(t.wire.size()) /
                     static_cast<double>(v.size())));
    p.wire_bytes = wire_kept * kSparseEntryBytes;
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    return scatter(p.indices, p.values, t.proxy.size());
  }

 private:
  float tau_;
};

}  // namespace

CompressorInfo threshold_compressor_entry() {
  CompressorInfo info{
      "threshold",
      "values with |v| >= threshold as (index, value) pairs; size depends on the data; biased",
      {ParamSpec("threshold", ParamKind::real, "0.01", "magnitude a value needs to be sent").at_least(0)},
      [](const Params& p) { return std::make_unique<Threshold>(static_cast<float>(p.real("threshold"))); }};
  info.sizes_depend_on_data = true;
  return info;
}

}  // namespace aggsim
