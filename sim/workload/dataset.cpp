#include "sim/workload/dataset.hpp"

#include <cmath>

#include "sim/workload/sampling.hpp"

namespace aggsim {

namespace {
// Sub-streams of Stream::workload; the rank slot ~0 marks draws shared by all ranks.
enum Purpose : std::uint64_t { kCentres = 1, kTeacher = 2, kHeldOut = 3, kMix = 4, kBatch = 5 };
constexpr std::uint64_t kShared = ~std::uint64_t{0};

Rng stream(std::uint64_t seed, std::uint64_t rank, Purpose purpose, std::uint64_t step = 0) {
  return make_rng(seed, Stream::workload, rank, (step << 8) | purpose);
}

void fill_normal(Rng& rng, float* data, Eigen::Index n, float scale) {
  for (Eigen::Index i = 0; i < n; ++i) data[i] = scale * static_cast<float>(standard_normal(rng));
}
}  // namespace

SyntheticData::SyntheticData(const WorkloadOptions& options, std::uint64_t seed)
    : options_(options), seed_(seed) {
  const int d = options.dim, k = options.classes;
  centres_.resize(d, k);
  Rng c = stream(seed, kShared, kCentres);
  fill_normal(c, centres_.data(), centres_.size(), static_cast<float>(3.0 / std::sqrt(2.0 * d)));
  teacher_.resize(d);
  Rng t = stream(seed, kShared, kTeacher);
  fill_normal(t, teacher_.data(), d, static_cast<float>(1.0 / std::sqrt(d)));
  Rng h = stream(seed, kShared, kHeldOut);
  held_out_ = sample(h, std::vector<double>(static_cast<std::size_t>(k), 1.0 / k), options.eval_samples);
}

std::vector<double> SyntheticData::class_mix(int rank) const {
  const int k = options_.classes;
  if (options_.noniid_alpha <= 0) return std::vector<double>(static_cast<std::size_t>(k), 1.0 / k);
  Rng rng = stream(seed_, static_cast<std::uint64_t>(rank), kMix);
  return symmetric_dirichlet(rng, k, options_.noniid_alpha);
}

Batch SyntheticData::minibatch(int rank, int step, const std::vector<double>& mix) const {
  Rng rng = stream(seed_, static_cast<std::uint64_t>(rank), kBatch, static_cast<std::uint64_t>(step));
  return sample(rng, mix, options_.batch);
}

Batch SyntheticData::sample(Rng& rng, const std::vector<double>& mix, int n) const {
  Batch b;
  b.x.resize(options_.dim, n);
  b.labels.resize(static_cast<std::size_t>(n));
  fill_normal(rng, b.x.data(), b.x.size(), 1.0f);
  for (int j = 0; j < n; ++j) {
    const int c = categorical_sample(rng, mix);
    b.labels[static_cast<std::size_t>(j)] = c;
    b.x.col(j) += centres_.col(c);
  }
  if (options_.problem == ProblemKind::least_squares) {
    b.targets = b.x.transpose() * teacher_;
    for (int j = 0; j < n; ++j) b.targets[j] += 0.1f * static_cast<float>(standard_normal(rng));
  }
  return b;
}

}  // namespace aggsim
