// All-gather aggregation without compression: exact reductions for every op and rank count, and the
// ring all-gather's alpha-beta closed form.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("all-gather gives every rank the exact reduction", "[allgather][math]") {
  check_identity_math("name: allgather");
}

// Ring all-gather of whole payloads: p-1 steps, in each every rank sends one S-byte payload to its
// right neighbour while receiving one from its left (full duplex, no link shared), and the identity
// compressor costs no encode or decode time: (p-1)(alpha + S/beta).
TEST_CASE("all-gather step time equals (p-1)(alpha + S/beta) under alpha_beta", "[allgather][formula]") {
  for (int p : {2, 3, 5, 8, 13})
    for (double S : {kSmall, kLarge})
      check_step_time("name: allgather", p, S, (p - 1) * (kAlpha + S / kBeta));
}
