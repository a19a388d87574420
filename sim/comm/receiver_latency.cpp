#include "sim/comm/receiver_latency.hpp"

#include <map>
#include <utility>

namespace aggsim::receiver_latency {

namespace {

bool g_available = false;
// Marked transfers not yet started, by sender and size (an ordered map: no hash of a double).
std::map<std::pair<const simgrid::s4u::Host*, double>, int> g_pending;

}  // namespace

void set_available(bool on) {
  g_available = on;
}

bool available() {
  return g_available;
}

void mark(const simgrid::s4u::Host* src, double bytes) {
  if (g_available) ++g_pending[{src, bytes}];
}

bool take(const simgrid::s4u::Host* src, double bytes) {
  if (g_pending.empty()) return false;
  const auto it = g_pending.find({src, bytes});
  if (it == g_pending.end()) return false;
  if (--it->second == 0) g_pending.erase(it);
  return true;
}

void reset() {
  g_available = false;
  g_pending.clear();
}

}  // namespace aggsim::receiver_latency
