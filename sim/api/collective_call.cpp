#include "sim/api/collective_call.hpp"

#include <array>
#include <cctype>

namespace aggsim {

namespace {
constexpr std::array<CollectiveKind, 6> kKinds = {
    CollectiveKind::all_reduce, CollectiveKind::all_gather,       CollectiveKind::reduce_scatter,
    CollectiveKind::broadcast,  CollectiveKind::parameter_server, CollectiveKind::neighbor_exchange};
}  // namespace

const char* collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::parameter_server:
      return "parameter_server";
    case CollectiveKind::neighbor_exchange:
      return "neighbor_exchange";
  }
  return "?";
}

std::optional<CollectiveKind> collective_kind_named(const std::string& name) {
  for (CollectiveKind k : kKinds)
    if (name == collective_kind_name(k)) return k;
  return std::nullopt;
}

std::optional<double> nccl_tests_bus_factor(CollectiveKind kind, int ranks) {
  const double p = ranks;
  if (!(p > 0)) return std::nullopt;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2 * (p - 1) / p;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      return (p - 1) / p;
    case CollectiveKind::broadcast:
      return 1.0;
    default:
      return std::nullopt;
  }
}

std::string canonical_collective(const std::string& name) {
  std::string n;
  for (char c : name)
    if (c != '_' && c != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.rfind("osu", 0) == 0) n = n.substr(3);
  if (n.size() > 4 && n.compare(n.size() - 4, 4, "perf") == 0) n = n.substr(0, n.size() - 4);
  if (n == "allreduce") return "all_reduce";
  if (n == "allgather") return "all_gather";
  if (n == "reducescatter") return "reduce_scatter";
  if (n == "broadcast" || n == "bcast") return "broadcast";
  if (n == "sendrecv") return "sendrecv";
  return "";
}

}  // namespace aggsim
