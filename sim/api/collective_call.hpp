#pragma once
// What an algorithm says about one aggregation call beyond its bytes and times: the NCCL
// algorithm, protocol and channels it ran (collectives.csv). Empty where it does not apply.
#include <string>

namespace aggsim {

struct CollectiveChoice {
  std::string nccl_algorithm;
  std::string protocol;
  int channels = 0;
};

}  // namespace aggsim
