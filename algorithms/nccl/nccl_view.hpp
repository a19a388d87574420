#pragma once
// What NCCL sees of the ranks of one communicator (a Group): which GPUs share a node, the NIC each
// GPU's traffic between nodes uses, the links inside a node (NVLink or PCIe, and whether they sit
// on a switch that reduces), the bandwidths its topology search would find, and the rings and
// trees it builds over them, per channel. Built once per run from the platform's hosts (their
// aggsim_node, aggsim_nic, aggsim_intra_link and aggsim_nvswitch properties and their routes).
//
// Rings: nodes in order of their first rank; inside a node, channel c starts at local GPU c mod g
// and goes round (so its ring enters a node at GPU c and leaves it at GPU c-1, and a node's
// channels use all of its NICs, as NCCL spreads channels over NICs). Trees: inside a node a chain
// in the channel's ring order from its first GPU, whose parent and children between nodes are
// those of NCCL's double binary tree over nodes: the first half of the channels use tree 0, the
// second half tree 1 (the mirror of tree 0 for an even node count, tree 0 shifted by one node for an
// odd one). On nodes whose GPUs form an xGMI mesh (no switch) channel c's order inside a node is
// instead mesh ring c mod R (mesh_rings.hpp, R arc-disjoint Hamiltonian cycles), cut where
// mesh_ring_cuts says, so the channels spread over every link of the mesh and over the node's NICs,
// as RCCL's ring lists for MI300X nodes do.
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "algorithms/nccl/nccl_tuning.hpp"
#include "algorithms/nccl/protocol.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// One binary tree over n positions (NCCL's btree: position 0 the root with a single child).
struct NodeTree {
  std::vector<int> parent;                   // -1 at the root
  std::vector<std::array<int, 2>> children;  // -1 where absent
  std::vector<int> depth;
  int height = 0;  // largest depth
};
// NCCL's double binary tree over n positions: tree 0 and tree 1.
std::array<NodeTree, 2> double_binary_tree(int n);

struct NcclTreeLinks {
  int parent = -1;            // member index, -1 at the root
  std::vector<int> children;  // member indices, in reduction order: chain child first, then nodes
};

class NcclView {
 public:
  // `members`: the communicator's ranks; `hosts`: every rank's host. Throws std::invalid_argument
  // naming what is inconsistent (a host without a route, nodes of no GPU).
  NcclView(const std::vector<int>& members, const std::vector<sg4::Host*>& hosts);

  int size() const { return static_cast<int>(members_.size()); }
  int nodes() const { return static_cast<int>(node_members_.size()); }
  int rank_of(int member) const { return members_[static_cast<std::size_t>(member)]; }
  sg4::Host* host_of(int member) const { return hosts_[static_cast<std::size_t>(member)]; }
  int node_of(int member) const { return node_of_[static_cast<std::size_t>(member)]; }
  const std::vector<int>& node_members(int node) const {
    return node_members_[static_cast<std::size_t>(node)];
  }
  int largest_node() const { return largest_node_; }
  int smallest_node() const { return smallest_node_; }
  bool intra_nvlink() const { return intra_nvlink_; }
  bool nvswitch() const { return nvswitch_; }  // every node's GPUs sit on a switch that reduces
  bool xgmi_mesh() const { return mesh_; }     // the nodes' GPUs form a full xGMI mesh
  int nics_per_node() const { return nics_; }
  // Several nodes, each an NVLink domain of several trays with their own NICs (multi-node NVLink:
  // NCCL fuses each domain's topology and joins the domains by their NICs).
  bool across_tray_domains() const { return spans_trays_ && nodes() > 1; }
  // B/s of a GPU's port towards the other GPUs of its node: its NVLink signalling rate, of which its
  // links carry nvlink_efficiency() as data (the platform's `nvlink_efficiency`).
  double intra_bandwidth() const { return intra_bw_; }
  double nvlink_efficiency() const { return nvlink_efficiency_; }
  // B/s one GPU sends to the others of its node over all its paths the rings use: its path's rate,
  // on a mesh the rate of one link times the mesh rings.
  double intra_total_bandwidth() const;
  double nic_bandwidth() const { return nic_bw_; }      // B/s of one GPU's path to another node
  // The class of link a hop from member a to member b crosses.
  LinkClass hop_class(int a, int b) const;

  // Channels NCCL opens: two per NIC between nodes, else enough for the GPU links at ~25 GB/s a
  // channel (NCCL's per-channel NVLink speeds), doubled; on xGMI mesh nodes a multiple of the mesh
  // rings, between nodes about two per NIC (14 for 8 GPUs and 8 NICs), on one node as many as 32
  // allow (28 for 8 GPUs, as RCCL's model of the MI300X node lists); at most kNcclMaxChannels.
  int default_channels(GpuArch arch = GpuArch::hopper) const;
  // NCCL's ring and tree graph when the nodes are NVLink domains of several trays (nccl_domain_graph),
  // else no channels.
  DomainGraph domain_graph(GpuArch arch) const;
  // NCCL's topology figures for a communicator of `channels` channels.
  NcclSystem system(int channels, GpuArch arch) const;

  // Channel c's ring: member indices in ring order.
  std::vector<int> ring(int channel) const;
  // Channel c's tree links of `member` (channels < total/2 use tree 0).
  NcclTreeLinks tree_links(int channel, int total_channels, int member) const;

 private:
  // Channel c's members of `node` in its order: the ring's path through the node.
  std::vector<int> local_order(int node, int channel) const;
  int mesh_ring_count() const;

  std::vector<int> members_;
  std::vector<sg4::Host*> hosts_;
  std::vector<int> node_of_, local_of_;
  std::vector<std::vector<int>> node_members_;
  std::array<NodeTree, 2> trees_;
  int largest_node_ = 1, smallest_node_ = 1;
  bool intra_nvlink_ = true, nvswitch_ = false, mesh_ = false;
  bool spans_trays_ = false;  // a node is an NVLink domain of several trays, each with its NICs
  NicPath gpu_nic_path_ = NicPath::pxb;
  int nics_ = 1;
  double intra_bw_ = 0, nic_bw_ = 0, nvlink_efficiency_ = 1;
};

}  // namespace aggsim
