// What a receiver gets from Comm: every field the sender filled, and the sender's wire size, both
// for messages that carry data and for those that carry only a size (math off), which travel with
// no payload object. Sizes near the limit of that path and past it are included.
#include <catch2/catch.hpp>
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/comm/comm.hpp"
#include "support/isolated.hpp"
#include "support/two_hosts.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

namespace sg4 = simgrid::s4u;

constexpr std::uint64_t kSizes[] = {0,
                                    1,
                                    4096,
                                    100000001,
                                    std::uint64_t{1} << 40,
                                    (std::uint64_t{1} << 62) - 1,
                                    std::uint64_t{1} << 62,
                                    (std::uint64_t{1} << 62) + 1};

std::vector<Payload> messages() {
  std::vector<Payload> out;
  for (const std::uint64_t bytes : kSizes) {
    Payload bare;
    bare.wire_bytes = bytes;
    out.push_back(bare);
  }
  Payload data;
  data.values = Eigen::VectorXf::LinSpaced(5, 1.0f, 5.0f);
  data.indices = {3, 1, 4};
  data.scales = Eigen::VectorXf::Constant(2, 0.5f);
  data.codes = {7, 8};
  data.tag = -42;
  data.seed = 99;
  data.wire_bytes = 123;
  out.push_back(data);
  Payload tagged;  // a protocol tag and nothing else still travels
  tagged.tag = 17;
  tagged.wire_bytes = 8;
  out.push_back(tagged);
  Payload seeded;
  seeded.seed = 5;
  seeded.wire_bytes = 64;
  out.push_back(seeded);
  return out;
}

std::string describe(const Payload& p) {
  std::ostringstream s;
  s << p.wire_bytes << " t" << p.tag << " s" << p.seed << " v";
  for (const float x : p.values) s << ' ' << x;
  s << " i";
  for (const auto x : p.indices) s << ' ' << x;
  s << " c";
  for (const float x : p.scales) s << ' ' << x;
  s << " q";
  for (const auto x : p.codes) s << ' ' << static_cast<int>(x);
  return s.str();
}

}  // namespace

TEST_CASE("a received message is what was sent, with or without data", "[comm]") {
  // Tiny sizes on a fast link keep the simulated time of 2^63 bytes finite and the run short.
  const std::string received = run_isolated([] {
    TwoHosts net = two_hosts({}, 1e30, 0);
    sg4::Host* a = net.a;
    sg4::Host* b = net.b;
    std::ostringstream out;
    sg4::Actor::create("sender", a, [] {
      Comm comm(0, 2);
      for (auto& m : messages()) comm.send(1, std::move(m), 3);
    });
    sg4::Actor::create("receiver", b, [&out] {
      Comm comm(1, 2);
      for (std::size_t i = 0; i < messages().size(); ++i) out << describe(comm.recv(0, 3)) << '\n';
    });
    net.engine->run();
    return out.str();
  });
  std::ostringstream expected;
  for (const auto& m : messages()) expected << describe(m) << '\n';
  CHECK(received == expected.str());
}
