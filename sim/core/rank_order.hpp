#pragma once
// Folds one contribution per rank in rank order, whatever order they arrive in, so that sums over
// ranks round the same way whichever rank finished first (SimGrid's order among ranks finishing at
// one instant, or a replayed step's). A contribution that arrives early waits until every lower
// rank's has been folded.
#include <map>
#include <utility>

namespace aggsim {

template <class T>
class InRankOrder {
 public:
  // Calls fold(value) for every contribution now in order, rank 0 first.
  template <class Fold>
  void add(int rank, T value, Fold&& fold) {
    waiting_.emplace(rank, std::move(value));
    for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_; it = waiting_.begin()) {
      fold(it->second);
      waiting_.erase(it);
      ++next_;
    }
  }
  int folded() const { return next_; }

 private:
  std::map<int, T> waiting_;
  int next_ = 0;
};

}  // namespace aggsim
