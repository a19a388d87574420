#include "sim/metrics/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace aggsim {

namespace {

// Chrome trace timestamps are microseconds; shortest round-trip text keeps files byte-stable.
std::string us(double seconds) {
  return fmt::format("{}", seconds * 1e6);
}

using Events = std::vector<std::string>;

// Named work lanes come after any number of send and receive lanes.
constexpr int kWorkLaneThread = 100000;

void complete_event(Events& out, const std::string& name, int pid, int tid, double start, double end,
                    const std::string& args) {
  out.push_back(
      fmt::format("{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                  "\"args\":{{{}}}}}",
                  name, name, pid, tid, us(start), us(end - start), args));
}

void metadata(Events& out, const char* what, int pid, int tid, const std::string& name) {
  out.push_back(
      fmt::format("{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}", what,
                  pid, tid, name));
}

// Lane of each span so that spans in one lane never overlap (interval partitioning, by start time).
std::vector<int> assign_lanes(const std::vector<const CommSpan*>& spans) {
  std::vector<double> lane_end;
  std::vector<int> lanes;
  for (const auto* s : spans) {
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > s->start) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = s->end;
    lanes.push_back(static_cast<int>(lane));
  }
  return lanes;
}

// The two ends of every message both sides recorded, in a deterministic order (the flows' ids).
struct MessageKey {
  int sender, receiver, channel;
  std::uint64_t sequence;
  bool operator<(const MessageKey& o) const {
    return std::tie(sender, receiver, channel, sequence) <
           std::tie(o.sender, o.receiver, o.channel, o.sequence);
  }
};
struct FlowEnd {
  int tid = -1;
  double ts = 0;  // the middle of its slice: inside it whatever a viewer does with slice boundaries
};

void flow_event(Events& out, char phase, std::size_t id, int pid, const FlowEnd& end) {
  out.push_back(
      fmt::format("{{\"name\":\"message\",\"cat\":\"message\",\"ph\":\"{}\",{}\"id\":{},\"pid\":{},\"tid\":{}"
                  ",\"ts\":{}}}",
                  phase, phase == 'f' ? "\"bp\":\"e\"," : "", id, pid, end.tid, us(end.ts)));
}

void link_counters(Events& out, int pid, const std::vector<LinkLoad>& link_loads) {
  if (link_loads.empty()) return;
  metadata(out, "process_name", pid, 0, "links");
  out.push_back(fmt::format(
      "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", pid,
      pid));
  for (const auto& load : link_loads)
    for (const auto& [time, bytes_per_s] : load.points)
      out.push_back(
          fmt::format("{{\"name\":{},\"ph\":\"C\",\"pid\":{},\"ts\":{},\"args\":{{\"bytes_per_s\":{}}}}}",
                      nlohmann::json(load.link).dump(), pid, us(time), bytes_per_s));
}

}  // namespace

std::string Tracer::chrome_trace(const StepLog& log, const std::string& title,
                                 const std::vector<LinkLoad>& link_loads,
                                 const std::vector<RankPlace>& places) const {
  Events out;
  std::map<MessageKey, std::pair<FlowEnd, FlowEnd>> messages;  // send end, receive end
  std::map<int, std::vector<const WorkSpan*>> work_by_rank;
  for (const auto& w : work_) work_by_rank[w.rank].push_back(&w);

  std::map<std::pair<int, CommDirection>, std::vector<const CommSpan*>> by_rank;
  for (const auto& c : comms_) by_rank[{c.rank, c.direction}].push_back(&c);
  for (auto& [key, spans] : by_rank)
    std::stable_sort(spans.begin(), spans.end(), [](const CommSpan* a, const CommSpan* b) {
      return a->start != b->start ? a->start < b->start : a->end < b->end;
    });

  for (int r = 0; r < log.ranks(); ++r) {
    metadata(out, "process_name", r, 0, fmt::format("rank {}", r));
    out.push_back(fmt::format(
        "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", r, r));
    if (static_cast<std::size_t>(r) < places.size()) {
      // `labels` is what viewers show beside the process name; `host` and `node` are for scripts.
      const RankPlace& p = places[static_cast<std::size_t>(r)];
      const std::string label = p.node == p.host ? p.host : fmt::format("{} on {}", p.host, p.node);
      out.push_back(fmt::format(
          "{{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"labels\":{},\"host\":{},"
          "\"node\":{}}}}}",
          r, nlohmann::json(label).dump(), nlohmann::json(p.host).dump(), nlohmann::json(p.node).dump()));
    }
    metadata(out, "thread_name", r, 0, "steps");
    for (int s = 0; s < log.steps(); ++s) {
      const RankStepRecord& rec = log.at(r, s);
      complete_event(out, "compute", r, 0, rec.start, rec.compute_end, fmt::format("\"step\":{}", s));
      complete_event(
          out, "aggregate", r, 0, rec.agg_start, rec.agg_end,
          fmt::format("\"step\":{},\"bytes_sent\":{},\"messages\":{}", s, rec.bytes_sent, rec.messages_sent));
    }
    std::map<int, std::string> lanes;  // named work lanes, in lane order
    for (const auto* w : work_by_rank[r])
      if (w->lane >= 0) lanes.emplace(w->lane, w->lane_name);
    for (const auto& [lane, name] : lanes) metadata(out, "thread_name", r, kWorkLaneThread + lane, name);
    for (const auto* w : work_by_rank[r])
      complete_event(out, w->name, r, w->lane < 0 ? 0 : kWorkLaneThread + w->lane, w->start, w->end, "");
    for (const CommDirection dir : {CommDirection::send, CommDirection::recv}) {
      auto it = by_rank.find({r, dir});
      if (it == by_rank.end()) continue;
      const bool send = dir == CommDirection::send;
      const auto lanes = assign_lanes(it->second);
      const int lane_count = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end()) + 1;
      // Threads 1, 3, 5, ... are send lanes; 2, 4, 6, ... receive lanes.
      for (int l = 0; l < lane_count; ++l)
        metadata(out, "thread_name", r, 1 + 2 * l + (send ? 0 : 1),
                 fmt::format("{} {}", send ? "send" : "recv", l));
      for (std::size_t i = 0; i < it->second.size(); ++i) {
        const CommSpan& c = *it->second[i];
        const int tid = 1 + 2 * lanes[i] + (send ? 0 : 1);
        // A stream is one transfer standing for a pipeline's pieces on one channel edge.
        complete_event(
            out, c.stream ? (send ? "stream out" : "stream in") : (send ? "send" : "recv"), r, tid, c.start,
            c.end,
            c.stream ? fmt::format("\"bytes\":{},\"peer\":{},\"channel\":{}", c.bytes, c.peer, c.channel)
                     : fmt::format("\"bytes\":{},\"peer\":{}", c.bytes, c.peer));
        auto& ends = messages[{send ? r : c.peer, send ? c.peer : r, c.channel, c.sequence}];
        (send ? ends.first : ends.second) = FlowEnd{tid, (c.start + c.end) / 2};
      }
    }
  }
  std::size_t flow_id = 0;
  for (const auto& [key, ends] : messages) {
    if (ends.first.tid < 0 || ends.second.tid < 0) continue;  // one side never waited for it
    flow_event(out, 's', flow_id, key.sender, ends.first);
    flow_event(out, 'f', flow_id, key.receiver, ends.second);
    ++flow_id;
  }
  link_counters(out, log.ranks(), link_loads);
  std::string text =
      fmt::format("{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"scenario\":{}}},\"traceEvents\":[\n",
                  nlohmann::json(title).dump());
  for (std::size_t i = 0; i < out.size(); ++i) text += (i ? ",\n" : "") + out[i];
  return text + "\n]}\n";
}

}  // namespace aggsim
