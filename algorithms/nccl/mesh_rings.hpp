#pragma once
// The rings RCCL runs over a node whose GPUs form a full xGMI mesh (no switch): each ring a
// Hamiltonian cycle over the node's GPUs, no two rings sharing a directed link, so that the channels
// spread over every link, as RCCL's own ring lists for the 8-GPU MI300X node do (ROCm/rccl
// src/graph/rome_models.cc: 14 rings that cross each of the 56 directed links exactly twice).
#include <vector>

namespace aggsim {

// Arc-disjoint directed Hamiltonian cycles over local GPUs 0..g-1, each starting at GPU 0: g - 1 of
// them (every directed link used once) where such a set exists and a bounded, seeded search finds
// it (g = 2, 3, 5, 7, 8, ...; none exists for g = 4 or 6, where it returns the most it found). The
// same g always gives the same rings. g = 1 gives one ring {0}. The search is bounded (about 10^8
// steps per node size), so a very large node may get fewer than g - 1 rings.
const std::vector<std::vector<int>>& mesh_rings(int g);

// Where channel c (0 <= c < channels) cuts its ring, mesh_rings(g)[c mod R], to cross nodes: the
// position k of the link ring[k] -> ring[k + 1] it leaves out, so the channel enters the node at
// ring[k + 1] and leaves it from ring[k] (through that GPU's NIC). Chosen channel by channel so that
// every GPU is a first and a last of as few channels as can be (at most ceil(c / g) among the first
// c channels where the rings allow): the channels then spread evenly over the node's NICs.
const std::vector<int>& mesh_ring_cuts(int g, int channels);

}  // namespace aggsim
