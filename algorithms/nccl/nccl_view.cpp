#include "algorithms/nccl/nccl_view.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "algorithms/nccl/mesh_rings.hpp"
#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

namespace {

// NCCL's btree over positions 0..n-1: position 0 is the root and has one child, the largest power
// of two below n; any other position r with lowest set bit b hangs below (r - b) | 2b (or r - b
// when that is beyond n) and has children r - b/2 and r + b/2 (halving the step while beyond n).
NodeTree btree(int n) {
  NodeTree t;
  t.parent.assign(static_cast<std::size_t>(n), -1);
  t.children.assign(static_cast<std::size_t>(n), {-1, -1});
  t.depth.assign(static_cast<std::size_t>(n), 0);
  for (int r = 1; r < n; ++r) {
    const int bit = r & -r;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n) up = r ^ bit;
    t.parent[static_cast<std::size_t>(r)] = up;
  }
  // Children in NCCL's order: the smaller position first.
  for (int r = 1; r < n; ++r) {
    auto& kids = t.children[static_cast<std::size_t>(t.parent[static_cast<std::size_t>(r)])];
    if (kids[0] < 0)
      kids[0] = r;
    else if (r < kids[0])
      kids = {r, kids[0]};
    else
      kids[1] = r;
  }
  for (int r = 1; r < n; ++r) {
    int d = 0;
    for (int x = r; x != 0; x = t.parent[static_cast<std::size_t>(x)]) ++d;
    t.depth[static_cast<std::size_t>(r)] = d;
    t.height = std::max(t.height, d);
  }
  return t;
}

// Tree 0 with each position p renamed to map(p).
template <class Map>
NodeTree renamed(const NodeTree& t, Map map) {
  const int n = static_cast<int>(t.parent.size());
  NodeTree out;
  out.parent.assign(static_cast<std::size_t>(n), -1);
  out.children.assign(static_cast<std::size_t>(n), {-1, -1});
  out.depth.assign(static_cast<std::size_t>(n), 0);
  out.height = t.height;
  for (int p = 0; p < n; ++p) {
    const auto q = static_cast<std::size_t>(map(p));
    const int up = t.parent[static_cast<std::size_t>(p)];
    out.parent[q] = up < 0 ? -1 : map(up);
    for (int k = 0; k < 2; ++k) {
      const int c = t.children[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)];
      out.children[q][static_cast<std::size_t>(k)] = c < 0 ? -1 : map(c);
    }
    out.depth[q] = t.depth[static_cast<std::size_t>(p)];
  }
  return out;
}

double narrowest_link(const sg4::Host* a, const sg4::Host* b) {
  std::vector<sg4::Link*> links;
  a->route_to(b, links, nullptr);
  double bw = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : links) bw = std::min(bw, l->get_bandwidth());
  return links.empty() ? 0 : bw;
}

}  // namespace

std::array<NodeTree, 2> double_binary_tree(int n) {
  const NodeTree t0 = btree(n);
  // The second tree: the mirror of the first for an even count, the first shifted by one for an odd.
  const NodeTree t1 = n % 2 == 0 ? renamed(t0, [n](int p) { return n - 1 - p; })
                                 : renamed(t0, [n](int p) { return (p + 1) % n; });
  return {t0, t1};
}

NcclView::NcclView(const std::vector<int>& members, const std::vector<sg4::Host*>& hosts)
    : members_(members) {
  if (members_.empty()) throw std::invalid_argument("a communicator of no rank");
  std::map<std::string, int> node_index;
  std::set<std::string> nics_of_first_node;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    sg4::Host* h = hosts.at(static_cast<std::size_t>(members_[m]));
    hosts_.push_back(h);
    // A multi-node NVLink domain is one node to NCCL (its ranks share one fused topology).
    const HostFacts& facts = host_facts(h);
    const std::string key = !facts.nvlink_domain.empty() ? "domain:" + facts.nvlink_domain
                            : facts.node.empty()         ? "host:" + h->get_name()
                                                         : "node:" + facts.node;
    const auto [it, fresh] = node_index.emplace(key, static_cast<int>(node_members_.size()));
    if (fresh) node_members_.emplace_back();
    node_of_.push_back(it->second);
    local_of_.push_back(static_cast<int>(node_members_[static_cast<std::size_t>(it->second)].size()));
    node_members_[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(m));
  }
  nvswitch_ = true;
  for (std::size_t n = 0; n < node_members_.size(); ++n) {
    const auto& nm = node_members_[n];
    largest_node_ = std::max(largest_node_, static_cast<int>(nm.size()));
    smallest_node_ = n == 0 ? static_cast<int>(nm.size()) : std::min(smallest_node_, static_cast<int>(nm.size()));
    std::set<std::pair<std::string, int>> nics;  // {node, NIC}: a domain has its nodes' NICs
    for (int m : nm) {
      const HostFacts& facts = host_facts(hosts_[static_cast<std::size_t>(m)]);
      nics.emplace(facts.node, facts.nic);
      if (facts.intra_link == IntraLink::pcie) intra_nvlink_ = false;
      // RCCL's topology counts xGMI as NVLink (LINK_NVL): its NVLink latencies, no switch.
      if (facts.intra_link == IntraLink::xgmi && nm.size() > 1) mesh_ = true;
      if (!facts.nvswitch) nvswitch_ = false;
      gpu_nic_path_ = std::max(gpu_nic_path_, facts.gpu_nic_path);
    }
    nics_ = std::max(nics_, static_cast<int>(nics.size()));
    std::set<std::string> trays;
    for (const auto& nic : nics) trays.insert(nic.first);
    if (trays.size() > 1) spans_trays_ = true;
    if (nm.size() > 1 && intra_bw_ == 0) {
      // The port's rate, which NCCL's graph search and NVLS see: the links were built at its data share.
      const sg4::Host* first = hosts_[static_cast<std::size_t>(nm[0])];
      nvlink_efficiency_ = host_facts(first).nvlink_efficiency;
      intra_bw_ = narrowest_link(first, hosts_[static_cast<std::size_t>(nm[1])]) / nvlink_efficiency_;
    }
  }
  if (node_members_.size() > 1)
    nic_bw_ = narrowest_link(hosts_[static_cast<std::size_t>(node_members_[0][0])],
                             hosts_[static_cast<std::size_t>(node_members_[1][0])]);
  if (largest_node_ == 1) nvswitch_ = false;
  trees_ = double_binary_tree(nodes());
}

LinkClass NcclView::hop_class(int a, int b) const {
  if (node_of(a) != node_of(b)) return LinkClass::network;
  return intra_nvlink_ ? LinkClass::nvlink : LinkClass::pcie;
}

int NcclView::mesh_ring_count() const {
  return std::max(1, static_cast<int>(mesh_rings(largest_node_).size()));
}

double NcclView::intra_total_bandwidth() const {
  return mesh_ ? intra_bw_ * mesh_ring_count() : intra_bw_;
}

DomainGraph NcclView::domain_graph(GpuArch arch) const {
  if (!across_tray_domains()) return {};
  return nccl_domain_graph(nccl_nvlink_GBps(arch, intra_bw_ / 1e9), nics_, nic_bw_ / 1e9);
}

int NcclView::default_channels(GpuArch arch) const {
  // Across NVLink domains that span trays: NCCL's graph for the fused clique, run twice.
  if (const DomainGraph d = domain_graph(arch); d.channels > 0) return std::clamp(2 * d.channels, 2, kNcclMaxChannels);
  // On a mesh every ring gets as many channels (else its links would carry more than the others'):
  // between nodes about two per NIC, on one node as many as fit.
  const int rings = mesh_ring_count();
  if (mesh_ && nodes() > 1) return std::min(kNcclMaxChannels, rings * std::max(1, 2 * nics_ / rings));
  if (nodes() > 1) return std::clamp(2 * nics_, 2, kNcclMaxChannels);
  if (mesh_) return rings * std::max(1, kNcclMaxChannels / rings);
  const int links = std::max(1, static_cast<int>(std::lround(intra_bw_ / 25e9)));
  return std::clamp(2 * links, 2, kNcclMaxChannels);
}

namespace {
constexpr double kNcclMaxChannelGBps = 48;  // the fastest speed of NCCL's search between nodes
}  // namespace

NcclSystem NcclView::system(int channels, GpuArch arch) const {
  NcclSystem s;
  s.ranks = size();
  s.nodes = nodes();
  s.intra_nvlink = intra_nvlink_;
  s.arch = arch;
  s.channels = std::max(1, channels);
  // NCCL's search gives a ring or tree channel between nodes at most 48 GB/s and packs as many as
  // the NICs carry (one per NIC of up to 400 Gb/s); inside one node half the communicator's, whose
  // rings NCCL duplicates.
  s.graph_channels =
      nodes() > 1 ? nics_ * std::max(1, static_cast<int>(std::floor(nic_bw_ / 1e9 / kNcclMaxChannelGBps)))
                  : std::max(1, default_channels(arch) / 2);
  const DomainGraph domain = domain_graph(arch);
  if (domain.channels > 0) s.graph_channels = domain.channels;
  s.domain_graph = domain.channels > 0;
  s.nvls_channels = std::min(nccl_nvls_channels(arch, nodes()), kNcclMaxChannels);
  s.nvls = nccl_nvls_supported(arch, nvswitch_, smallest_node_);
  if (s.nvls) {
    const NvlsGraph g = nccl_nvls_graph(largest_node_, nodes(), nics_, nccl_nvlink_GBps(arch, intra_bw_ / 1e9),
                                        nic_bw_ / 1e9, arch);
    s.nvls_heads = g.heads;
    s.nvls_bw_intra = g.bw_intra;
    s.nvls_bw_inter = g.bw_inter;
  }
  s.gpu_nic_path = gpu_nic_path_;
  // Across NVLink domains NCCL's graph carries its channels at its speed, not every NIC's rate.
  const double inter_total = domain.channels > 0 ? domain.channels * domain.speed : nics_ * nic_bw_ / 1e9;
  const double intra_total = intra_bw_ > 0 ? intra_total_bandwidth() / 1e9 : inter_total;
  s.bw_intra = intra_total / s.channels;
  s.bw_inter = (nodes() > 1 ? inter_total : intra_total) / s.channels;
  return s;
}

std::vector<int> NcclView::local_order(int node, int channel) const {
  const auto& nm = node_members_[static_cast<std::size_t>(node)];
  const int g = static_cast<int>(nm.size());
  std::vector<int> order;
  order.reserve(nm.size());
  if (!mesh_ || g < 2) {
    for (int k = 0; k < g; ++k) order.push_back(nm[static_cast<std::size_t>((channel + k) % g)]);
    return order;
  }
  const auto& rings = mesh_rings(g);
  const auto& cycle = rings[static_cast<std::size_t>(channel) % rings.size()];
  // Cut where the channels spread evenly over the node's first and last GPUs (so over its NICs).
  const auto& cuts = mesh_ring_cuts(g, kNcclMaxChannels);
  const int start = cuts[static_cast<std::size_t>(channel % kNcclMaxChannels)] + 1;
  for (int k = 0; k < g; ++k)
    order.push_back(nm[static_cast<std::size_t>(cycle[static_cast<std::size_t>((start + k) % g)])]);
  return order;
}

std::vector<int> NcclView::ring(int channel) const {
  std::vector<int> order;
  order.reserve(members_.size());
  for (int n = 0; n < nodes(); ++n) {
    const std::vector<int> local = local_order(n, channel);
    order.insert(order.end(), local.begin(), local.end());
  }
  return order;
}

NcclTreeLinks NcclView::tree_links(int channel, int total_channels, int member) const {
  const NodeTree& tree = trees_[channel < std::max(1, total_channels / 2) ? 0 : 1];
  const int node = node_of(member);
  const auto chain = [&](int n) { return local_order(n, channel); };
  const std::vector<int> mine = chain(node);
  const auto pos = static_cast<std::size_t>(std::find(mine.begin(), mine.end(), member) - mine.begin());
  NcclTreeLinks links;
  if (pos + 1 < mine.size()) links.children.push_back(mine[pos + 1]);
  if (pos > 0) {
    links.parent = mine[pos - 1];
    return links;
  }
  const int up = tree.parent[static_cast<std::size_t>(node)];
  if (up >= 0) links.parent = chain(up).front();
  for (int child : tree.children[static_cast<std::size_t>(node)])
    if (child >= 0) links.children.push_back(chain(child).front());
  return links;
}

}  // namespace aggsim
