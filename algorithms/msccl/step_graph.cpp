#include "algorithms/msccl/step_graph.hpp"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <tuple>

namespace aggsim {

MscclStepGraph::MscclStepGraph(const MscclProgram& p) : p_(p) {
  steps_.reserve(p.step_count);
  using Connection = std::tuple<int, int, int>;  // sender, receiver, channel
  std::map<Connection, std::vector<int>> sends, receives;
  for (const MscclGpu& g : p.gpu) {
    gpu_first_tb_.push_back(static_cast<int>(tb_first_.size()));
    for (const MscclThreadblock& tb : g.threadblocks) {
      const int global = static_cast<int>(tb_first_.size());
      tb_first_.push_back(static_cast<int>(steps_.size()));
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const MscclStep& st = tb.steps[s];
        const int id = static_cast<int>(steps_.size());
        steps_.push_back({g.id, tb.id, global, static_cast<int>(s), &st});
        if (msccl_step_sends(st.type)) sends[{g.id, tb.send_peer, tb.channel}].push_back(id);
        if (msccl_step_receives(st.type)) receives[{tb.recv_peer, g.id, tb.channel}].push_back(id);
      }
    }
  }
  feeding_send_.assign(steps_.size(), -1);
  for (const auto& [connection, ids] : receives) {
    const auto it = sends.find(connection);
    if (it == sends.end()) continue;
    for (std::size_t k = 0; k < ids.size() && k < it->second.size(); ++k)
      feeding_send_[static_cast<std::size_t>(ids[k])] = it->second[k];
  }
  // Kahn's order over the three kinds of edges, first-come first-served.
  successors_.assign(steps_.size(), 0);
  std::vector<std::vector<int>> next(steps_.size());
  std::vector<int> waits(steps_.size(), 0);
  for (int id = 0; id < static_cast<int>(steps_.size()); ++id)
    for (const int before : {previous(id), dependency(id), feeding_send(id)})
      if (before >= 0) {
        next[static_cast<std::size_t>(before)].push_back(id);
        ++successors_[static_cast<std::size_t>(before)];
        ++waits[static_cast<std::size_t>(id)];
      }
  std::deque<int> ready;
  for (int id = 0; id < static_cast<int>(steps_.size()); ++id)
    if (waits[static_cast<std::size_t>(id)] == 0) ready.push_back(id);
  order_.reserve(steps_.size());
  while (!ready.empty()) {
    const int id = ready.front();
    ready.pop_front();
    order_.push_back(id);
    for (const int after : next[static_cast<std::size_t>(id)])
      if (--waits[static_cast<std::size_t>(after)] == 0) ready.push_back(after);
  }
}

int MscclStepGraph::previous(int id) const {
  return at(id).index > 0 ? id - 1 : -1;
}

int MscclStepGraph::dependency(int id) const {
  const MscclStepRef& s = at(id);
  if (s.step->dep_tb < 0) return -1;
  const int tb = gpu_first_tb_[static_cast<std::size_t>(s.gpu)] + s.step->dep_tb;
  return tb_first_[static_cast<std::size_t>(tb)] + s.step->dep_step;
}

std::string MscclStepGraph::name(int id) const {
  const MscclStepRef& s = at(id);
  return fmt::format("gpu {} tb {} step {} (line {})", s.gpu, s.tb, s.index, s.step->line);
}

}  // namespace aggsim
