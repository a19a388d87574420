#pragma once
// ATOMO's sampling probabilities, exposed for tests.
#include <vector>

namespace aggsim {

// Probabilities p_i in [0, 1] minimising sum sigma_i^2 / p_i subject to sum p_i = budget
// (Wang et al. 2018, Algorithm 2): p_i = min(1, c sigma_i), found by water-filling over the sorted
// spectrum. Zero atoms get p = 0; when budget >= the number of nonzero atoms all of them get 1.
std::vector<double> atomo_probabilities(const std::vector<double>& sigma, double budget);

}  // namespace aggsim
