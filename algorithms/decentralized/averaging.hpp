#pragma once
// Pieces shared by the decentralized schemes. They average full models with neighbours, so a rank
// ends with its estimate of the global average; op sum / custom_avg scale that estimate (by p,
// by p / denominator), min / max have no gossip form and are rejected at load time.
#include <fmt/format.h>

#include <deque>
#include <memory>
#include <string>
#include <variant>

#include "sim/api/aggregator.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

inline void check_averaging_scheme(const AlgorithmConfig& cfg, const std::string& algorithm) {
  const ReduceOp& op = cfg.op;
  if (op.kind == ReduceKind::min || op.kind == ReduceKind::max)
    throw ParamError("op", fmt::format("{} averages models with neighbours and cannot compute op {}; use avg "
                                       "(or sum / custom_avg, which scale the average estimate)",
                                       algorithm, reduce_kind_name(op.kind)));
  // Whole dense models travel; a compressor would be silently ignored.
  if (cfg.compression != "none")
    throw ParamError("compression",
                     fmt::format("{} sends whole dense models and does not use compressor '{}'; "
                                 "remove the compression section",
                                 algorithm, cfg.compression));
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

// Text identifying a configuration (parameters, world, seed).
inline std::string config_key(const AlgorithmConfig& cfg) {
  std::string key =
      fmt::format("{}|{}|{}|{}", cfg.world, cfg.seed, static_cast<int>(cfg.op.kind), cfg.op.denominator);
  for (const auto& [name, value] : cfg.params.all()) {
    key += "|" + name + "=";
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            for (auto x : v) key += fmt::format("{},", x);
          } else if constexpr (std::is_same_v<T, NumberRows>) {
            for (const auto& row : v)
              for (auto x : row) key += fmt::format("{},", x);
          } else {
            key += fmt::format("{}", v);
          }
        },
        value);
  }
  return key;
}

// Structure every rank's aggregator shares (a graph, a topology): the factory runs once per rank
// with the same configuration, so it is built once and handed out read-only.
template <class T>
class SharedBuild {
 public:
  template <class Build>
  std::shared_ptr<const T> get(const AlgorithmConfig& cfg, Build&& build) {
    const std::string key = config_key(cfg);
    if (!value_ || key != key_) {
      value_ = std::make_shared<const T>(build());
      key_ = key;
    }
    return value_;
  }

 private:
  std::string key_;
  std::shared_ptr<const T> value_;
};

}  // namespace aggsim
