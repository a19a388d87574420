// Transfers marked by Comm::charge_latency_at_receiver carry no latency in the network, every other
// one keeps the model's: on one link of 1 ms and 1 GB/s (CM02, factors 1), 1 MB takes 2.05 ms (its
// acknowledgements' 5 % share the link, SimGrid's crosstraffic), marked 1.05 ms; the mark is used up by its transfer; where SimGrid takes no callback (a user's latency factor)
// nothing is marked and the factor holds.
#include <catch2/catch.hpp>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/comm/comm.hpp"
#include "sim/comm/receiver_latency.hpp"
#include "sim/engine/network_factors.hpp"
#include "support/isolated.hpp"
#include "support/two_hosts.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

namespace sg4 = simgrid::s4u;

// Sends 1 MB four times (the second and third marked) and returns each transfer's time and whether
// marking was available.
std::string transfer_times(const std::string& extra_cfg) {
  return run_isolated([extra_cfg] {
    std::vector<std::string> cfg = {"--cfg=network/model:CM02"};
    if (!extra_cfg.empty()) cfg.push_back(extra_cfg);
    TwoHosts net = two_hosts(cfg, 1e9, 1e-3);
    sg4::Engine& engine = *net.engine;
    sg4::Host* a = net.a;
    sg4::Host* b = net.b;
    forget_installed_factors();
    install_receiver_latency(engine);
    std::ostringstream out;
    out << (receiver_latency::available() ? "available" : "unavailable");
    sg4::Actor::create("sender", a, [] {
      Comm comm(0, 2);
      for (int i = 0; i < 4; ++i) {
        Payload m;
        m.wire_bytes = 1000000;
        comm.charge_latency_at_receiver(i == 1 || i == 2);
        comm.send(1, std::move(m));
      }
    });
    sg4::Actor::create("receiver", b, [&out] {
      Comm comm(1, 2);
      for (int i = 0; i < 4; ++i) {
        const double start = sg4::Engine::get_clock();
        comm.recv(0);
        out << ' ' << (sg4::Engine::get_clock() - start) * 1e3;
      }
    });
    engine.run();
    return out.str();
  });
}

}  // namespace

TEST_CASE("transfers marked for the receiver's latency carry none in the network", "[comm]") {
  CHECK(transfer_times("") == "available 2.05 1.05 1.05 2.05");
  // SimGrid takes no callback beside --cfg=network/latency-factor: marks do nothing, the factor holds.
  CHECK(transfer_times("--cfg=network/latency-factor:2") == "unavailable 3.05 3.05 3.05 3.05");
}
