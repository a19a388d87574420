#pragma once
// Whether two vectors hold the same floats bit for bit (so any arithmetic on them rounds alike):
// how the math log and the evaluator keep one copy of the vectors all ranks share after an
// all-reduce instead of one copy a rank.
#include <Eigen/Core>
#include <cstring>

namespace aggsim {

inline bool same_bits(const Eigen::VectorXf& a, const Eigen::VectorXf& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0;
}

}  // namespace aggsim
