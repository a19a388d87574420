#pragma once
// A SimGrid engine of two hosts, "a" and "b", joined by one link: the smallest network on which the
// comm layer's tests send messages. Build it inside run_isolated (one engine per process).
#include <simgrid/s4u.hpp>

#include <memory>
#include <string>
#include <vector>

namespace aggsim::test {

struct TwoHosts {
  std::unique_ptr<simgrid::s4u::Engine> engine;
  simgrid::s4u::Host* a = nullptr;
  simgrid::s4u::Host* b = nullptr;
};

// `cfg`: extra SimGrid command-line options (e.g. "--cfg=network/model:CM02").
inline TwoHosts two_hosts(const std::vector<std::string>& cfg, double bandwidth, double latency) {
  std::vector<std::string> args = {"comm", "--log=xbt_cfg.thres:warning", "--cfg=contexts/factory:raw"};
  args.insert(args.end(), cfg.begin(), cfg.end());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  int argc = static_cast<int>(argv.size());
  TwoHosts net;
  net.engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
  auto* zone = simgrid::s4u::create_full_zone("zone");
  net.a = zone->create_host("a", 1e9);
  net.b = zone->create_host("b", 1e9);
  auto* link = zone->create_link("link", bandwidth)->set_latency(latency)->seal();
  zone->add_route(net.a->get_netpoint(), net.b->get_netpoint(), nullptr, nullptr,
                  {simgrid::s4u::LinkInRoute(link)}, true);
  zone->seal();
  return net;
}

}  // namespace aggsim::test
