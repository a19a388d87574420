#pragma once
// A compressor with a memory (GRACE's Memory role around its Compressor): it compresses
// memory.compensate(g) and tells the memory what went out. Built by the registry when the scenario
// names a memory other than `none`.
#include <memory>

#include "algorithms/compression/compressor.hpp"
#include "algorithms/memory/memory.hpp"

namespace aggsim {

class CompressorWithMemory final : public Compressor {
 public:
  CompressorWithMemory(std::unique_ptr<Compressor> inner, std::unique_ptr<Memory> memory)
      : inner_(std::move(inner)), memory_(std::move(memory)) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override { return inner_->piece_bytes(piece); }
  bool summable() const override { return inner_->summable(); }
  bool unbiased() const override { return false; }  // the memory carries information across steps
  bool shared_randomness() const override { return inner_->shared_randomness(); }
  std::uint32_t value_bytes() const override { return inner_->value_bytes(); }
  // Updating the memory decodes once more and touches every value.
  double piece_encode_flops(const WirePiece& piece) const override {
    return inner_->piece_encode_flops(piece) + inner_->piece_decode_flops(piece) +
           memory_->flops_per_value() * static_cast<double>(piece.shape.size());
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    return inner_->piece_decode_flops(piece);
  }
  Eigen::VectorXf reduce(const std::vector<Payload>& payloads, const TensorDesc& t,
                         const ReduceOp& op) const override {
    return inner_->reduce(payloads, t, op);
  }
  const Memory& memory() const { return *memory_; }
  // Of the compensated vector the last encode really compressed, not of `values`.
  EncodingError encoding_error(const Eigen::Ref<const Eigen::VectorXf>& /*values*/,
                               const Payload& /*payload*/, const TensorDesc& /*t*/) const override {
    return last_error_;
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override;
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    return inner_->decompress(p, t);
  }

 private:
  std::unique_ptr<Compressor> inner_;
  std::unique_ptr<Memory> memory_;
  EncodingError last_error_;
};

}  // namespace aggsim
