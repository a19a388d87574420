#pragma once
// Timeline recording for `output: {trace: true}`: spans of every rank (communication from sim/comm,
// labelled host work such as compression from RankContext::compute, and each step's compute and
// aggregation phases from the StepLog), rendered as Chrome trace events (trace.json, opens in
// Perfetto or chrome://tracing), plus per-link traffic (links.csv).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/metrics/step_log.hpp"

namespace aggsim {

enum class CommDirection { send, recv };

struct CommSpan {
  int rank = 0;
  CommDirection direction = CommDirection::send;
  int peer = 0;
  std::uint64_t bytes = 0;
  double start = 0;  // simulated seconds
  double end = 0;
  // Which message this is: the `sequence`-th posted on this side of the (sender, receiver, channel)
  // mailbox. Mailboxes match sends and receives first come first served, so a send and the
  // receive with the same sender, receiver, channel and sequence are one message.
  int channel = 0;
  std::uint64_t sequence = 0;
  // A flow-level stream standing for a pipeline's pieces on one channel edge (its send and receive
  // ends are one transfer, shown as "stream" on both ranks).
  bool stream = false;
};

// A link's load over time for a counter track: at each `points[i].first` (simulated seconds) the
// load becomes `points[i].second` bytes per second, until the next point.
struct LinkLoad {
  std::string link;
  std::vector<std::pair<double, double>> points;
};

struct WorkSpan {
  int rank = 0;
  std::string name;  // "compress", "decompress", "compute", ...
  double start = 0;
  double end = 0;
  // Its own lane of the rank (e.g. an MSCCL threadblock's steps): spans with the same lane number
  // share a thread named `lane_name`; -1: the rank's first thread, with the steps.
  int lane = -1;
  std::string lane_name = {};
};

// Where a rank runs, for the trace's process labels: its host and its node (the node's name, or the
// host's when the host is alone on its node).
struct RankPlace {
  std::string host;
  std::string node;
};

class Tracer {
 public:
  void comm(const CommSpan& span) { comms_.push_back(span); }
  void work(WorkSpan span) { work_.push_back(std::move(span)); }
  const std::vector<CommSpan>& comms() const { return comms_; }

  // The Chrome trace: one process per rank (labelled with its host and node when `places` gives
  // them); thread 0 holds the step phases and host work, each
  // further thread one lane of non-overlapping sends or receives, then one thread per named work
  // lane (thread 100000 + lane); a flow (arrow) from each send to
  // its receive; then one process "links" with a counter track per loaded link. Times in
  // microseconds. The format is described in analysis/README.md ("Timeline").
  std::string chrome_trace(const StepLog& log, const std::string& title,
                           const std::vector<LinkLoad>& link_loads = {},
                           const std::vector<RankPlace>& places = {}) const;

 private:
  std::vector<CommSpan> comms_;
  std::vector<WorkSpan> work_;
};

}  // namespace aggsim
