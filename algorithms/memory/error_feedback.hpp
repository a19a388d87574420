#pragma once
// Error feedback (Seide et al. 2014; Karimireddy et al. 2019), GRACE's Memory role: before
// compressing, add the residual of what previous steps did not send; afterwards keep
// residual = compensated - decompress(payload). Per rank (each rank owns its compressor) and per
// tensor id; a tensor whose size changes starts from a zero residual.
#include <map>
#include <memory>

#include "algorithms/compression/compressor.hpp"

namespace aggsim {

class ResidualMemory {
 public:
  // g + the tensor's residual (zero the first time).
  Eigen::VectorXf compensate(std::uint64_t id, const Eigen::Ref<const Eigen::VectorXf>& g) const;
  // residual = compensated - sent
  void update(std::uint64_t id, const Eigen::VectorXf& compensated,
              const Eigen::Ref<const Eigen::VectorXf>& sent);
  // Null before the first update of `id`.
  const Eigen::VectorXf* residual(std::uint64_t id) const;

 private:
  std::map<std::uint64_t, Eigen::VectorXf> residuals_;
};

// Wraps any compressor; scenario key `error_feedback: true`.
class ErrorFeedback final : public Compressor {
 public:
  explicit ErrorFeedback(std::unique_ptr<Compressor> inner) : inner_(std::move(inner)) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override { return inner_->piece_bytes(piece); }
  bool summable() const override { return inner_->summable(); }
  bool unbiased() const override { return false; }  // the residual carries information across steps
  bool shared_randomness() const override { return inner_->shared_randomness(); }
  std::uint32_t value_bytes() const override { return inner_->value_bytes(); }
  // Compensating and updating the residual decode once more and touch every value twice.
  double piece_encode_flops(const WirePiece& piece) const override {
    return inner_->piece_encode_flops(piece) + inner_->piece_decode_flops(piece) +
           2.0 * static_cast<double>(piece.shape.size());
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    return inner_->piece_decode_flops(piece);
  }
  Eigen::VectorXf reduce(const std::vector<Payload>& payloads, const TensorDesc& t,
                         const ReduceOp& op) const override {
    return inner_->reduce(payloads, t, op);
  }
  const ResidualMemory& memory() const { return memory_; }
  // Of the compensated vector c = v + residual: the residual just kept is c - decode(payload).
  EncodingError encoding_error(const Eigen::Ref<const Eigen::VectorXf>& values, const Payload& payload,
                               const TensorDesc& t) const override;

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override;
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    return inner_->decompress(p, t);
  }

 private:
  std::unique_ptr<Compressor> inner_;
  ResidualMemory memory_;
};

}  // namespace aggsim
