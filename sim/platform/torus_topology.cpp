// A torus (SimGrid TORUS, as <cluster topology="TORUS" topo_parameters="4,4,4">): nodes sit on a
// grid with wrap-around, each with one full-duplex link of `bandwidth` / `latency` to its next
// neighbour in every dimension (a direct network: no switches, nodes forward). SimGrid routes
// dimension by dimension, the short way round, so a transfer costs hops x latency where hops is the
// sum over dimensions of min(|dx|, size - |dx|); neighbours are one link apart.
// Default dimensions: the near-cubic factorisation of the node count (16 -> 2x2x4, 16384 ->
// 16x32x32), dropping dimensions of size 1 (a prime count gives a ring).
#include <fmt/format.h>

#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "sim/platform/endpoints.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/shape_math.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

// a <= b <= c with a*b*c = n and the largest factor as small as possible.
std::vector<std::int64_t> near_cubic(std::int64_t n) {
  std::int64_t best_a = 1, best_b = 1, best_c = n;
  for (std::int64_t a = 1; a * a * a <= n; ++a) {
    if (n % a != 0) continue;
    const std::int64_t m = n / a;
    for (std::int64_t b = a; b * b <= m; ++b) {
      if (m % b != 0) continue;
      if (m / b < best_c) {
        best_a = a;
        best_b = b;
        best_c = m / b;
      }
    }
  }
  std::vector<std::int64_t> dims;
  for (auto d : {best_a, best_b, best_c})
    if (d > 1) dims.push_back(d);
  if (dims.empty()) dims.push_back(1);
  return dims;
}

std::vector<std::int64_t> torus_dimensions(const Params& p, std::int64_t nodes) {
  if (!p.has("dimensions")) return near_cubic(nodes);
  const auto& dims = p.integers("dimensions");
  const std::int64_t product = capped_product(dims, std::int64_t(1) << 40);
  if (product != nodes)
    throw std::invalid_argument(
        fmt::format("dimensions: their product is {} but the torus has {} nodes", product, nodes));
  return dims;
}

void build_torus(const NodeShape& nodes, const FabricShape& fabric, const ResolvedOverrides& overrides) {
  EndpointBuilder endpoints(nodes, &overrides);
  const auto& dims = fabric.torus.dimensions;
  create_platform_root();
  auto* zone = sg4::create_torus_zone("torus", nullptr, convert_all<unsigned long>(dims),
                                      endpoints.callbacks("torus-spare"), nodes.bandwidth, nodes.latency,
                                      sg4::Link::SharingPolicy::SPLITDUPLEX);
  endpoints.attach();
  join_fabric(zone);
  // A torus has no host links: a node's own links are all its neighbour links,
  // torus_link_from_<a>_to_<b> with the node at either end.
  std::vector<std::int64_t> numbers;
  override_fabric_links(overrides, [&](const std::string& name, std::vector<std::int64_t>& owners) {
    if (numbers_after(name, "torus_link_from_", numbers) && numbers.size() >= 2)
      owners.insert(owners.end(), {numbers[0], numbers[1]});
  });
}

}  // namespace

TopologyInfo torus_topology_entry() {
  TopologyInfo info;
  info.name = "torus";
  info.summary = "k-ary n-cube with wrap-around links (SimGrid TORUS, dimension-order routing)";
  info.params = endpoint_params("each neighbour link");
  info.params.push_back(
      ParamSpec("dimensions", ParamKind::integer_list, "",
                "size of each dimension, product = nodes (default: near-cubic factorisation)")
          .between(1, 1 << 22));
  info.decode = [](const NodeShape& shape, const Params& p) {
    FabricShape fabric;
    fabric.torus.dimensions = torus_dimensions(p, shape.endpoints());
    return fabric;
  };
  info.build = build_torus;
  return info;
}

}  // namespace aggsim
