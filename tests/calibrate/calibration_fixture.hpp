// What several calibrate tests start from: one node of 8 GPUs as a scenario, and the column header
// nccl-tests prints above its table.
#pragma once

namespace aggsim::test {

// 8-GPU nodes: 100 GB/s, 1 us per GPU link; 10 GB/s, 10 us fabric links (crossed twice).
inline const char* const kOneNodeScenario = R"(name: cal
ranks: 8
steps: 1
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 100GBps, intra_latency: 1us,
           bandwidth: 10GBps, latency: 10us}
network: alpha_beta
model: {size: 1MB, math: off}
algorithm: {name: ring_allreduce}
compute: {reduce_speed: 0}
)";

// nccl-tests 2.17's three header lines (out-of-place and in-place columns).
inline const char* const kNcclTestsHeader =
    "#                                                              out-of-place                       "
    "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
    "busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
    "(GB/s)\n";

}  // namespace aggsim::test
