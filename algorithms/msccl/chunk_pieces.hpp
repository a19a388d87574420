#pragma once
// A buffer of chunks as pieces of consecutive chunks that share one description (what they hold,
// who touched them last): a step moving `cnt` chunks touches the pieces its range covers, not each
// chunk, so the checks of a program cost what its steps and the ranges they cut cost, whatever the
// chunk counts.
#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

namespace aggsim {

template <class T>
class ChunkPieces {
 public:
  ChunkPieces() = default;
  ChunkPieces(int size, T initial) : size_(size) {
    if (size > 0) pieces_.emplace(0, std::move(initial));
  }
  int size() const { return size_; }

  // f(begin, end, T&) for each piece of [begin, end), cut first so that none reaches outside.
  template <class F>
  void update(int begin, int end, F&& f) {
    if (begin >= end) return;
    cut(begin);
    cut(end);
    for (auto it = pieces_.find(begin); it != pieces_.end() && it->first < end; ++it)
      f(it->first, end_of(it), it->second);
  }
  // f(begin, end, const T&) for the parts of the pieces inside [begin, end), without cutting.
  template <class F>
  void read(int begin, int end, F&& f) const {
    if (begin >= end || pieces_.empty()) return;
    auto it = std::prev(pieces_.upper_bound(begin));
    for (; it != pieces_.end() && it->first < end; ++it)
      f(std::max(begin, it->first), std::min(end, end_of(it)), it->second);
  }

 private:
  using Iterator = typename std::map<int, T>::const_iterator;
  int end_of(Iterator it) const {
    const auto next = std::next(it);
    return next == pieces_.end() ? size_ : next->first;
  }
  void cut(int at) {
    if (at <= 0 || at >= size_) return;
    auto after = pieces_.upper_bound(at);
    auto holding = std::prev(after);
    if (holding->first != at) pieces_.emplace_hint(after, at, holding->second);
  }

  int size_ = 0;
  std::map<int, T> pieces_;  // by first chunk; a piece reaches the next one's first chunk
};

}  // namespace aggsim
