#include "algorithms/msccl/program_checks.hpp"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "sim/core/error.hpp"

namespace aggsim {

namespace {

[[noreturn]] void fail(const MscclProgram& p, int line, const std::string& key, const std::string& message) {
  throw InputError(fmt::format("{}: {}: {}", p.where(line), key, message));
}

// Every dependency names a step of another threadblock of the same GPU that signals (hasdep="1"):
// the runtime only raises a threadblock's flag after steps that have it.
void check_dependencies(const MscclProgram& p) {
  for (const MscclGpu& g : p.gpu)
    for (const MscclThreadblock& tb : g.threadblocks)
      for (const MscclStep& s : tb.steps) {
        if (s.dep_tb < 0) continue;
        if (static_cast<std::size_t>(s.dep_tb) >= g.threadblocks.size())
          fail(
              p, s.line, "step.depid",
              fmt::format("gpu {} has no threadblock {} (it has {})", g.id, s.dep_tb, g.threadblocks.size()));
        const MscclThreadblock& other = g.threadblocks[static_cast<std::size_t>(s.dep_tb)];
        if (static_cast<std::size_t>(s.dep_step) >= other.steps.size())
          fail(p, s.line, "step.deps",
               fmt::format("threadblock {} of gpu {} has no step {} (it has {})", s.dep_tb, g.id, s.dep_step,
                           other.steps.size()));
        if (!other.steps[static_cast<std::size_t>(s.dep_step)].has_dep)
          fail(p, s.line, "step.deps",
               fmt::format("gpu {} threadblock {} step {} is waited for but has hasdep=\"0\" (line {}): the "
                           "runtime signals only steps with hasdep=\"1\"",
                           g.id, s.dep_tb, s.dep_step,
                           other.steps[static_cast<std::size_t>(s.dep_step)].line));
      }
}

// Steps of one GPU wait for the step before them in their threadblock and for their dependency:
// a cycle among those waits can never start.
void check_cycles(const MscclProgram& p) {
  for (const MscclGpu& g : p.gpu) {
    std::vector<std::size_t> first(g.threadblocks.size() + 1, 0);
    for (std::size_t t = 0; t < g.threadblocks.size(); ++t)
      first[t + 1] = first[t] + g.threadblocks[t].steps.size();
    const std::size_t n = first.back();
    std::vector<std::pair<int, int>> node(n);  // (tb, step)
    std::vector<int> waits(n, 0);
    std::vector<std::vector<std::size_t>> dependents(n);
    for (std::size_t t = 0; t < g.threadblocks.size(); ++t)
      for (std::size_t s = 0; s < g.threadblocks[t].steps.size(); ++s) {
        const std::size_t i = first[t] + s;
        node[i] = {static_cast<int>(t), static_cast<int>(s)};
        if (s > 0) {
          ++waits[i];
          dependents[i - 1].push_back(i);
        }
        const MscclStep& st = g.threadblocks[t].steps[s];
        if (st.dep_tb >= 0) {
          ++waits[i];
          dependents[first[static_cast<std::size_t>(st.dep_tb)] + static_cast<std::size_t>(st.dep_step)]
              .push_back(i);
        }
      }
    std::deque<std::size_t> ready;
    for (std::size_t i = 0; i < n; ++i)
      if (waits[i] == 0) ready.push_back(i);
    std::size_t done = 0;
    while (!ready.empty()) {
      const std::size_t i = ready.front();
      ready.pop_front();
      ++done;
      for (std::size_t d : dependents[i])
        if (--waits[d] == 0) ready.push_back(d);
    }
    if (done == n) continue;
    // Walk back from a step that never became ready through waits that never ended: a cycle.
    std::size_t at = 0;
    while (waits[at] == 0) ++at;
    std::map<std::size_t, std::size_t> seen;  // node -> position in path
    std::vector<std::size_t> path;
    while (!seen.count(at)) {
      seen[at] = path.size();
      path.push_back(at);
      const auto [t, s] = node[at];
      const MscclStep& st = g.threadblocks[static_cast<std::size_t>(t)].steps[static_cast<std::size_t>(s)];
      const std::size_t dep =
          st.dep_tb >= 0 ? first[static_cast<std::size_t>(st.dep_tb)] + static_cast<std::size_t>(st.dep_step)
                         : n;
      at = dep < n && waits[dep] > 0 ? dep : at - 1;  // else the step before it in its threadblock
    }
    const std::vector<std::size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(seen[at]), path.end());
    std::string text;
    int line = 0;
    for (std::size_t k = 0; k < cycle.size(); ++k) {
      const auto [t, s] = node[cycle[k]];
      const auto [nt, ns] = node[cycle[(k + 1) % cycle.size()]];
      if (nt == t) continue;  // the step before it in order
      const MscclStep& st = g.threadblocks[static_cast<std::size_t>(t)].steps[static_cast<std::size_t>(s)];
      if (line == 0) line = st.line;
      text += fmt::format("{}tb {} step {} waits for tb {} step {}", text.empty() ? "" : "; ", t, s, nt, ns);
    }
    fail(
        p, line, "step.depid",
        fmt::format("dependency cycle on gpu {}: {} (each threadblock runs its steps in order)", g.id, text));
  }
}

struct End {
  int gpu = -1, tb = -1;
};

// The messages of one end of a connection: (step index, chunk count) in order.
std::vector<std::pair<int, int>> messages(const MscclThreadblock& tb, bool sending) {
  std::vector<std::pair<int, int>> out;
  for (std::size_t s = 0; s < tb.steps.size(); ++s) {
    const MscclStep& st = tb.steps[s];
    if (sending ? msccl_step_sends(st.type) : msccl_step_receives(st.type))
      out.emplace_back(static_cast<int>(s), st.count);
  }
  return out;
}

void check_connections(const MscclProgram& p) {
  using Key = std::tuple<int, int, int>;  // sender, receiver, channel
  std::map<Key, End> senders, receivers;
  for (const MscclGpu& g : p.gpu)
    for (const MscclThreadblock& tb : g.threadblocks) {
      for (const bool sending : {true, false}) {
        const int peer = sending ? tb.send_peer : tb.recv_peer;
        if (peer < 0) continue;
        const Key key = sending ? Key{g.id, peer, tb.channel} : Key{peer, g.id, tb.channel};
        auto& ends = sending ? senders : receivers;
        const auto [it, fresh] = ends.emplace(key, End{g.id, tb.id});
        if (!fresh)
          fail(p, tb.line, sending ? "tb.send" : "tb.recv",
               fmt::format(
                   "gpu {} threadblocks {} and {} both {} gpu {} on channel {}: a connection has one {} "
                   "threadblock",
                   g.id, it->second.tb, tb.id, sending ? "send to" : "receive from", peer, tb.channel,
                   sending ? "sending" : "receiving"));
      }
    }
  const auto tb_of = [&](const End& e) -> const MscclThreadblock& {
    return p.gpu[static_cast<std::size_t>(e.gpu)].threadblocks[static_cast<std::size_t>(e.tb)];
  };
  for (const auto& [key, sender] : senders) {
    const auto [from, to, channel] = key;
    const auto sent = messages(tb_of(sender), true);
    const auto it = receivers.find(key);
    if (it == receivers.end()) {
      if (sent.empty()) continue;
      fail(p, tb_of(sender).line, "tb.send",
           fmt::format(
               "gpu {} threadblock {} sends {} message{} to gpu {} on channel {}, and no threadblock of "
               "gpu {} receives from gpu {} on channel {}",
               from, sender.tb, sent.size(), sent.size() == 1 ? "" : "s", to, channel, to, from, channel));
    }
    const auto received = messages(tb_of(it->second), false);
    for (std::size_t k = 0; k < std::min(sent.size(), received.size()); ++k)
      if (sent[k].second != received[k].second) {
        const MscclStep& st = tb_of(sender).steps[static_cast<std::size_t>(sent[k].first)];
        fail(p, st.line, "step.cnt",
             fmt::format(
                 "gpu {} threadblock {} step {} sends {} chunk{} to gpu {} on channel {}, where the matching "
                 "receive (gpu {} threadblock {} step {}, line {}) takes {}",
                 from, sender.tb, sent[k].first, sent[k].second, sent[k].second == 1 ? "" : "s", to, channel,
                 to, it->second.tb, received[k].first,
                 tb_of(it->second).steps[static_cast<std::size_t>(received[k].first)].line,
                 received[k].second));
      }
    if (sent.size() != received.size())
      fail(p, tb_of(sender).line, "tb.send",
           fmt::format(
               "gpu {} threadblock {} sends {} message{} to gpu {} on channel {}, and gpu {} threadblock {} "
               "receives {} (line {})",
               from, sender.tb, sent.size(), sent.size() == 1 ? "" : "s", to, channel, to, it->second.tb,
               received.size(), tb_of(it->second).line));
  }
  for (const auto& [key, receiver] : receivers) {
    const auto [from, to, channel] = key;
    const auto received = messages(tb_of(receiver), false);
    if (received.empty() || senders.count(key)) continue;
    fail(p, tb_of(receiver).line, "tb.recv",
         fmt::format(
             "gpu {} threadblock {} receives {} message{} from gpu {} on channel {}, and no threadblock of "
             "gpu {} sends to gpu {} on channel {}",
             to, receiver.tb, received.size(), received.size() == 1 ? "" : "s", from, channel, from, to,
             channel));
  }
}

}  // namespace

void check_msccl_program_structure(const MscclProgram& program) {
  check_dependencies(program);
  check_cycles(program);
  check_connections(program);
}

}  // namespace aggsim
