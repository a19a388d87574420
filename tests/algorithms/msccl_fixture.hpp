// What the msccl tests share: the shipped and test programs' folders, a scenario around a program, a
// 2-GPU ring to edit line by line, and running validate or run on a program to see it refused.
#pragma once

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace aggsim::test::msccl {

namespace fs = std::filesystem;

inline const std::string kSource = AGGSIM_SOURCE_DIR;
inline const std::string kPrograms = kSource + "/algorithms/msccl/programs/";
inline const std::string kData = kSource + "/tests/data/msccl/";
inline const std::string kCluster8 = "{topology: cluster, nodes: 8, bandwidth: 100Gbps, latency: 1us}";
inline const std::string kNodes2x4 = "{topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 100Gbps}";

inline std::string scenario(int ranks, const std::string& platform, const std::string& algorithm,
                            const std::string& model = "{size: 1MiB, proxy_dim: 1000}") {
  return fmt::format("name: m\nranks: {}\nsteps: 2\nplatform: {}\nmodel: {}\nalgorithm: {}\n", ranks,
                     platform, model, algorithm);
}

// A 2-GPU ring all-reduce, in place, one element per line (the line numbers the errors name).
inline const std::string kTwoGpuRing =
    R"(<algo name="ring2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="-1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="-1" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="o" dstoff="-1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="-1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

// `text` with `from` replaced by `to` on line `line` (which must hold it).
inline std::string edit(std::string text, int line, const std::string& from, const std::string& to) {
  std::size_t at = 0;
  for (int l = 1; l < line; ++l) at = text.find('\n', at) + 1;
  const std::size_t end = text.find('\n', at);
  const std::size_t hit = text.find(from, at);
  REQUIRE(hit != std::string::npos);
  REQUIRE(hit < end);
  return text.replace(hit, from.size(), to);
}

// A step line of the test programs.
inline std::string step(int s, const std::string& type, const std::string& src, const std::string& dst,
                        int dep_tb = -1, int dep_step = -1, int has_dep = 0, int cnt = 1) {
  const auto side = [](const std::string& b) {
    return b.empty() ? std::pair<std::string, std::string>{"i", "-1"}
                     : std::pair{b.substr(0, 1), b.substr(1)};
  };
  const auto [sb, so] = side(src);
  const auto [db, dof] = side(dst);
  return fmt::format(
      "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" dstoff=\"{}\" cnt=\"{}\" "
      "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
      s, type, sb, so, db, dof, cnt, dep_tb, dep_step, has_dep);
}

// Two GPUs that each send all their `k` chunks to the other before receiving any (or receive all
// first), then add what they received: an exact all-reduce, if the connections hold k calls.
inline std::string exchange_program(int k, const std::string& proto, bool receive_first = false) {
  std::string text = fmt::format(
      "<algo name=\"exchange\" proto=\"{}\" nchannels=\"1\" nchunksperloop=\"{}\" ngpus=\"2\" "
      "coll=\"allreduce\" "
      "inplace=\"1\">\n",
      proto, k);
  for (int g = 0; g < 2; ++g) {
    text += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"{}\">\n", g, k, k);
    text += fmt::format("    <tb id=\"0\" send=\"{}\" recv=\"{}\" chan=\"0\">\n", 1 - g, 1 - g);
    int s = 0;
    const auto sends = [&] {
      for (int c = 0; c < k; ++c) text += step(s++, "s", fmt::format("i{}", c), "");
    };
    const auto receives = [&] {
      for (int c = 0; c < k; ++c) text += step(s++, "r", "", fmt::format("s{}", c));
    };
    if (receive_first) {
      receives();
      sends();
    } else {
      sends();
      receives();
    }
    for (int c = 0; c < k; ++c) text += step(s++, "re", fmt::format("s{}", c), fmt::format("i{}", c));
    text += "    </tb>\n  </gpu>\n";
  }
  return text + "</algo>\n";
}

struct Checked {
  CliResult result;
  bool wrote_output = false;
};

// Writes the program (when given) and a scenario running it, then `aggsim VERB` (run writes to
// out/): its result, and whether anything was written.
inline Checked check_program(const std::string& program_text, const std::string& verb = "validate",
                             int ranks = 2, const std::string& platform = "",
                             const std::string& model = "{size: 1MiB, proxy_dim: 100}",
                             const std::string& program_key = "prog.xml") {
  const auto dir = fresh_dir("msccl");
  if (!program_text.empty()) write_file(dir / "prog.xml", program_text);
  write_file(
      dir / "s.yaml",
      scenario(ranks, platform.empty() ? fmt::format("{{topology: cluster, hosts: {}}}", ranks) : platform,
               "{name: msccl, op: sum, program: " + program_key + "}", model));
  std::vector<std::string> args = {verb, "s.yaml"};
  if (verb == "run") args.insert(args.end(), {"--out", "out", "-q"});
  Checked c;
  c.result = run_aggsim(args, dir);
  c.wrote_output = fs::exists(dir / "out");
  fs::remove_all(dir);
  return c;
}

// Refused by validate and run alike, with exit status 2, `message` on stderr and nothing written.
inline void check_refused(const std::string& program_text, const std::string& message, int ranks = 2,
                          const std::string& platform = "") {
  for (const std::string verb : {"validate", "run"}) {
    INFO(verb);
    const Checked c = check_program(program_text, verb, ranks, platform);
    INFO(c.result.err);
    CHECK(c.result.exit_code == 2);
    CHECK_THAT(c.result.err, Catch::Contains(message));
    CHECK_FALSE(c.wrote_output);
  }
}

}  // namespace aggsim::test::msccl
