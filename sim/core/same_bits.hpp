#pragma once
// Whether two vectors hold the same floats bit for bit (so any arithmetic on them rounds alike):
// how the math log and the evaluator keep one copy of the vectors all ranks share after an
// all-reduce instead of one copy a rank.
#include <Eigen/Core>
#include <cstring>
#include <memory>

namespace aggsim {

inline bool same_bits(const Eigen::VectorXf& a, const Eigen::VectorXf& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0;
}

// `v` as a shared copy: `first` itself when `v` is bit for bit the same, else a new copy, which
// becomes `first` when there was none yet.
inline std::shared_ptr<const Eigen::VectorXf> share_if_same(std::shared_ptr<const Eigen::VectorXf>& first,
                                                            const Eigen::VectorXf& v) {
  if (first && same_bits(*first, v)) return first;
  auto copy = std::make_shared<const Eigen::VectorXf>(v);
  if (!first) first = copy;
  return copy;
}

}  // namespace aggsim
