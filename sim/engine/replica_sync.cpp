#include "sim/engine/replica_sync.hpp"

namespace aggsim {

ReplicaSync::ReplicaSync(int replicas, int members, std::int64_t proxy_size) {
  for (int r = 0; r < replicas; ++r) {
    barriers_.push_back(simgrid::s4u::Barrier::create(static_cast<unsigned>(members)));
    if (proxy_size > 0)
      vectors_.push_back({Eigen::VectorXf::Zero(proxy_size), Eigen::VectorXf::Zero(proxy_size)});
  }
}

void ReplicaSync::assemble(int replica, int step, const Range& part, Eigen::VectorXf& values) {
  const auto r = static_cast<std::size_t>(replica);
  Eigen::VectorXf* whole = values.size() && !vectors_.empty() ? &vectors_[r][step % 2] : nullptr;
  if (whole) whole->segment(part.begin, part.count) = values.segment(part.begin, part.count);
  barriers_[r]->wait();
  if (whole) values = *whole;
}

}  // namespace aggsim
