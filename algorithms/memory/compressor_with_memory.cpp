#include "algorithms/memory/compressor_with_memory.hpp"

#include <fmt/format.h>

#include "algorithms/registry.hpp"

namespace aggsim {

Payload CompressorWithMemory::encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t,
                                     Rng& rng) {
  const Eigen::VectorXf compensated = memory_->compensate(t.id, v);
  Payload p = inner_->compress(compensated, t, rng);
  const Eigen::VectorXf sent = inner_->decompress(p, t);
  last_error_ = {(compensated - sent).cast<double>().squaredNorm(), compensated.cast<double>().squaredNorm()};
  memory_->update(t.id, compensated, sent);
  return p;
}

const MemoryInfo& memory_for(const Params& compressor_params) {
  const bool error_feedback =
      compressor_params.has("error_feedback") && compressor_params.boolean("error_feedback");
  if (!compressor_params.has("memory")) return *find_memory(error_feedback ? "residual" : "none");
  const std::string& name = compressor_params.text("memory");
  if (error_feedback && name != "residual")
    throw ParamError("memory", fmt::format("error_feedback: true is memory: residual, which contradicts "
                                           "memory: {}; give only one of them",
                                           name));
  return *find_memory(name);
}

// Every compressor but `none` accepts `memory` and its shorthand `error_feedback`; the factory wraps
// the compressor when the memory keeps something.
CompressorInfo with_memory(CompressorInfo info) {
  if (info.name == "none") return info;
  info.params.push_back(ParamSpec("error_feedback", ParamKind::boolean, "false",
                                  "shorthand for memory: residual (error feedback)"));
  std::vector<std::string> names;
  for (const auto& m : memory_table()) names.push_back(m.name);
  info.params.push_back(ParamSpec("memory", ParamKind::choice, "",
                                  "what each rank keeps of what compression did not send: none | residual "
                                  "(default: residual with error_feedback: true, else none)")
                            .one_of(names));
  info.make = [make = info.make](const Params& p) -> std::unique_ptr<Compressor> {
    auto inner = make(p);
    std::unique_ptr<Memory> memory = memory_for(p).make();
    if (memory) return std::make_unique<CompressorWithMemory>(std::move(inner), std::move(memory));
    return inner;
  };
  return info;
}

}  // namespace aggsim
