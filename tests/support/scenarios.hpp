#pragma once
// The small valid scenario that input-error tests start from: 4 ranks on a generated 4-host
// cluster, one step of a 1 MB ring all-reduce under alpha_beta. Tests that check file:line
// positions rely on its 12 lines (the last is `  name: ring_allreduce`).

namespace aggsim::test {

inline constexpr char kSmallScenario[] = R"(seed: 7
ranks: 4
steps: 1
platform:
  topology: cluster
  hosts: 4
network: alpha_beta
model:
  size: 1MB
  proxy_dim: 64
algorithm:
  name: ring_allreduce
)";

}  // namespace aggsim::test
