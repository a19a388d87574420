#pragma once
// NCCL's own INFO lines in a benchmark log (NCCL_DEBUG=INFO): the per-call tuning line that names
// the algorithm, protocol and channels NCCL chose (NCCL_DEBUG_SUBSYS=TUNING; the default
// subsystems do not print it), and the channel counts of the init lines. Each is read in one pass
// over its words, without regular expressions.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/api/collective_call.hpp"

namespace aggsim {

// One per-call tuning line. The formats NCCL has printed (src/enqueue.cc, rank 0 only):
//   2.20 - 2.22   "N Bytes -> Algo A proto P time T"               A, P: enum numbers
//   2.23          "Func: N Bytes -> Algo A proto P time T"
//   2.24 -        "Func: N Bytes -> Algo NAME proto NAME channel{Lo..Hi}={lo..hi}"
//   2.27 -        "Func [Symmetric]: N Bytes -> Kernel NAME nchannels C nthreads T ..."
//   2.29 -        "Func [Copy Engine]: N Bytes -> cudaMemcpy..."
// and "nChannels C" in place of the channel range. Algorithm numbers follow NCCL's enum from 2.10
// on: 0 Tree, 1 Ring, 2 CollNet(Direct), 3 CollNetChain, 4 NVLS, 5 NVLSTree, 6 PAT; protocols 0 LL,
// 1 LL128, 2 Simple.
struct TuningLine {
  std::string function;     // NCCL's name ("AllReduce"); empty in the 2.20 - 2.22 format
  std::string collective;   // canonical_collective(function): empty when none or not one we read
  std::uint64_t bytes = 0;  // as printed
  // The 2.24 - formats count one rank's part of an all-gather or reduce-scatter (NCCL's count
  // argument); the "time" formats, the whole buffer.
  bool bytes_per_rank = false;
  // nccl_algorithm "ring" | "tree" | "nvls" | "nvls_tree" | "collnet_direct" | "collnet_chain" |
  // "pat", or "symmetric" / "copy_engine" for NCCL's kernels outside that menu; protocol "ll" |
  // "ll128" | "simple", empty for those two; channels 0 when the line does not say.
  CollectiveChoice choice;
};

struct TuningParse {
  bool is_tuning = false;          // the message has a tuning line's shape ("N Bytes -> ...")
  std::optional<TuningLine> line;  // set when it could be read
  std::string why;                 // why not, for a tuning line that could not be read
};

// NCCL's name of an algorithm or protocol, any case ("Ring", "NVLSTree", "CollNetDirect"; "LL128",
// "Simple"), as aggsim spells it ("ring", "nvls_tree", "collnet_direct"; "ll128", "simple"); empty
// when it names none.
std::string nccl_algorithm_spelling(const std::string& word);
std::string nccl_protocol_spelling(const std::string& word);

// `message`: the text after "NCCL INFO ".
TuningParse parse_tuning_message(const std::string& message);

// The text after "NCCL INFO " in a line, or nullopt when the line has no such marker.
std::optional<std::string> nccl_info_message(const std::string& line);

// An init line that counts channels:
//   "N coll channels, [M collnet channels, ][K nvls channels, ]P p2p channels, ..."  coll = N, nvls = K
//   "Channel 03/08 :    0   1   2   3"   (rank 0's rings)                           coll = 8
//   "Channel 03 :    0   1   2   3"      (NCCL 2.4's rings)                         ring_index = 3
// Transport lines ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC") are not channel counts.
struct ChannelLine {
  bool ring = false;    // a ring line (else "N coll channels, ...")
  int coll = 0;         // 0: not said
  int nvls = -1;        // -1: not said
  int ring_index = -1;  // a ring line without its count: the ring's number
};
std::optional<ChannelLine> parse_channel_message(const std::string& message);

}  // namespace aggsim
