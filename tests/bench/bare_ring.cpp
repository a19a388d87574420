// Reference for `aggsim bench`: the ring all-reduce's message pattern in plain SimGrid S4U, with no
// payload data, no scenario, no metrics. Usage: bare_ring PLATFORM.xml RANKS BYTES [--cfg=...]
// Prints the simulated time and the number of messages.
#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml RANKS BYTES [--cfg=...]\n", argv[0]);
    return 2;
  }
  engine.load_platform(argv[1]);
  const int p = std::atoi(argv[2]);
  const double bytes = std::atof(argv[3]);
  auto hosts = engine.get_all_hosts();  // any p distinct hosts of a uniform cluster will do
  if (static_cast<int>(hosts.size()) < p) return 2;
  static char token;
  static long messages = 0;
  // The same wire sizes as the real ring: fp32 elements split in p balanced chunks; at reduce-scatter
  // step s rank r sends chunk (r - s) mod p, at all-gather step s chunk (r - s + 1) mod p.
  const auto elements = static_cast<std::uint64_t>((bytes + 3) / 4);
  auto chunk_bytes = [elements, p](int c) {
    return 4 * (elements / p + (static_cast<std::uint64_t>(c) < elements % p ? 1 : 0));
  };
  for (int r = 0; r < p; ++r) {
    sg4::Actor::create("rank", hosts[static_cast<std::size_t>(r)], [r, p, chunk_bytes] {
      sg4::Mailbox* out = sg4::Mailbox::by_name(std::to_string(r) + ">" + std::to_string((r + 1) % p));
      sg4::Mailbox* in = sg4::Mailbox::by_name(std::to_string((r + p - 1) % p) + ">" + std::to_string(r));
      for (int s = 0; s < 2 * (p - 1); ++s) {
        char* received = nullptr;
        sg4::CommPtr get = in->get_async<char>(&received);
        const int c = s < p - 1 ? (r - s + p) % p : (r - (s - (p - 1)) + 1 + p) % p;
        sg4::CommPtr put = out->put_async(&token, chunk_bytes(c));
        get->wait();
        put->wait();
        ++messages;
      }
    });
  }
  engine.run();
  std::printf("%.17g %ld\n", sg4::Engine::get_clock(), messages);
  return 0;
}
