#pragma once
// Pieces shared by the decentralized schemes. They average full models with neighbours, so a rank
// ends with its estimate of the global average; op sum / custom_avg scale that estimate (by p,
// by p / denominator), min / max have no gossip form and are rejected at load time.
#include <fmt/format.h>

#include <deque>
#include <memory>
#include <string>

#include "algorithms/registry.hpp"
#include "sim/api/aggregator.hpp"

namespace aggsim {

inline void check_averaging_scheme(const AlgorithmConfig& cfg, const std::string& algorithm) {
  const ReduceOp& op = cfg.op;
  if (op.kind == ReduceKind::min || op.kind == ReduceKind::max)
    throw ParamError("op", fmt::format("{} averages models with neighbours and cannot compute op {}; use avg "
                                       "(or sum / custom_avg, which scale the average estimate)",
                                       algorithm, reduce_kind_name(op.kind)));
  // Whole dense models travel; a compressor would be silently ignored.
  if (cfg.compressor && cfg.compressor->name != "none")
    throw ParamError("compression",
                     fmt::format("{} sends whole dense models and does not use compressor '{}'; "
                                 "remove the compression section",
                                 algorithm, cfg.compressor->name));
}

// Factor turning an estimate of the average into an estimate of the op's result.
inline float averaging_scale(const ReduceOp& op, int world) {
  if (op.kind == ReduceKind::sum) return static_cast<float>(world);
  if (op.kind == ReduceKind::custom_avg) return static_cast<float>(world / op.denominator);
  return 1.0f;
}

// The whole model as one dense fp32 message.
inline Payload model_payload(const Gradient& grad, std::int64_t tag = 0) {
  Payload p;
  p.values = grad.values;
  p.wire_bytes = grad.wire_elements * kFloatBytes;
  p.tag = tag;
  return p;
}

// Asynchronous schemes keep their sends in flight: drop the completed ones, or wait for all.
inline void reap_sends(std::deque<SendHandle>& sends, bool all) {
  while (!sends.empty() && (all || sends.front().done())) {
    sends.front().wait();
    sends.pop_front();
  }
}

}  // namespace aggsim
