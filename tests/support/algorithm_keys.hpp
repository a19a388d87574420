#pragma once
// Keys an algorithm needs besides its name, for the tests that run every algorithm the registry
// has: `msccl` needs a program for the scenario's rank count (a ring from tests/data/msccl/).
#include <fmt/format.h>

#include <string>

namespace aggsim::test {

// ", key: value" to append inside `algorithm: {name: NAME...}`, or "".
inline std::string required_algorithm_keys(const std::string& algorithm, int ranks) {
  if (algorithm == "msccl")
    return fmt::format(", program: {}/tests/data/msccl/ring_allreduce_{}.xml", AGGSIM_SOURCE_DIR, ranks);
  return "";
}

}  // namespace aggsim::test
