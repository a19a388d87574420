// A reducing collective carrying compressed payloads. Valid for summable compressors only: every
// rank's payload has the same structure (shared-seed random-k: the same indices; fp16: dense), so
// reducing payload.values element-wise and decoding once equals decoding each and reducing, because
// decoding is linear in the values. The inner collective sees a flat gradient of
// ceil(wire_bytes / 4) fp32 elements, so its wire traffic is the encoding's size.
#include "algorithms/transport/compressed_reduction.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class CompressedReduction final : public Aggregator {
 public:
  CompressedReduction(std::unique_ptr<Aggregator> collective, std::unique_ptr<Compressor> compressor)
      : collective_(std::move(collective)), compressor_(std::move(compressor)) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const TensorDesc t = TensorDesc::of(grad);
    Payload payload = compress_on_rank(ctx, *compressor_, grad.values, t);
    Gradient carried =
        flat_gradient(std::move(payload.values), (payload.wire_bytes + kFloatBytes - 1) / kFloatBytes);
    collective_->aggregate(ctx, carried);
    payload.values = std::move(carried.values);
    charge_decode(ctx, *compressor_, t);
    grad.values = compressor_->decompress(payload, t);
  }

 private:
  std::unique_ptr<Aggregator> collective_;
  std::unique_ptr<Compressor> compressor_;
};

}  // namespace

std::unique_ptr<Aggregator> make_compressed_reduction(std::unique_ptr<Aggregator> collective,
                                                      std::unique_ptr<Compressor> compressor) {
  if (!compressor->summable())
    throw std::invalid_argument("a reducing collective can only carry a summable compressor's payloads");
  return std::make_unique<CompressedReduction>(std::move(collective), std::move(compressor));
}

TransportInfo compressed_reduction_transport() {
  TransportInfo transport;
  transport.name = "compressed_reduction";
  transport.summary = "a reducing collective adds summable payloads in flight, each rank decodes the sum";
  transport.check = [](const AlgorithmConfig& cfg) {
    // A compressor whose payloads cannot be added must not ride a collective that adds in flight.
    if (!cfg.make_compressor()->summable())
      throw ParamError(
          "compression",
          fmt::format("compressor '{}' is not summable, so '{}' cannot add its payloads in flight; "
                      "use algorithm 'allgather' or 'parameter_server' instead",
                      cfg.compressor->name, cfg.algorithm->name));
  };
  transport.wrap = [](std::unique_ptr<Aggregator> collective, const AlgorithmConfig& cfg) {
    return make_compressed_reduction(std::move(collective), cfg.make_compressor());
  };
  return transport;
}

}  // namespace aggsim
