#include "sim/engine/replica_sync.hpp"

namespace aggsim {

ReplicaSync::ReplicaSync(int replicas, int members, std::int64_t proxy_size, bool sharded) {
  for (int r = 0; r < replicas; ++r) {
    barriers_.push_back(simgrid::s4u::Barrier::create(static_cast<unsigned>(members)));
    if (proxy_size > 0 && !sharded)
      vectors_.push_back({Eigen::VectorXf::Zero(proxy_size), Eigen::VectorXf::Zero(proxy_size)});
  }
  if (proxy_size > 0 && sharded) weights_ = {Eigen::VectorXf::Zero(proxy_size), Eigen::VectorXf::Zero(proxy_size)};
}

void ReplicaSync::keep_shard(int step, const Range& shard, const Eigen::VectorXf& weights) {
  Eigen::VectorXf& whole = weights_[static_cast<std::size_t>(step % 2)];
  if (whole.size() && shard.count > 0) whole.segment(shard.begin, shard.count) = weights.segment(shard.begin, shard.count);
}

void ReplicaSync::take_others(int step, const Range& own, Eigen::VectorXf& weights) const {
  const Eigen::VectorXf& whole = weights_[static_cast<std::size_t>(step % 2)];
  if (!whole.size() || !weights.size()) return;
  weights.head(own.begin) = whole.head(own.begin);
  const std::int64_t after = own.begin + own.count;
  weights.tail(weights.size() - after) = whole.tail(whole.size() - after);
}

void ReplicaSync::assemble(int replica, int step, const Range& part, Eigen::VectorXf& values) {
  const auto r = static_cast<std::size_t>(replica);
  Eigen::VectorXf* whole = values.size() && !vectors_.empty() ? &vectors_[r][step % 2] : nullptr;
  if (whole) whole->segment(part.begin, part.count) = values.segment(part.begin, part.count);
  barriers_[r]->wait();
  if (whole) values = *whole;
}

}  // namespace aggsim
