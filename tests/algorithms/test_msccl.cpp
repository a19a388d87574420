// `msccl`: MSCCL algorithm files checked before anything is simulated (a deadlock with the
// runtime's bounded slots, a wrong result, a malformed file each refused with file:line and what is
// wrong) and timed against the built-in collectives they reproduce (algorithms/msccl/README.md).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "msccl_fixture.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;
using namespace aggsim::test::msccl;
namespace fs = std::filesystem;

namespace {

double step_time(int ranks, const std::string& platform, const std::string& algorithm,
                 const std::string& size) {
  // Reductions free: the GPU reduces inside its kernels, as nccl_allreduce and msccl assume.
  const std::string yaml = scenario(ranks, platform, algorithm, "{size: " + size + ", math: off}") +
                           "compute: {reduce_speed: 0}\n";
  return step_times(yaml).at(0);
}

// Every rank's vector after step 0, as hex floats, from a run in a child process.
std::string result_bits(const std::string& yaml) {
  return run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "bits.yaml", {});
    const Captured run = simulate_capturing(sc);
    std::string out;
    for (const auto& v : run.after.at(0))
      for (Eigen::Index i = 0; i < v.size(); ++i) out += fmt::format("{:a} ", v[i]);
    return out;
  });
}

std::string with_proto(std::string text, const std::string& proto) {
  const auto at = text.find("proto=\"Simple\"");
  REQUIRE(at != std::string::npos);
  return text.replace(at, 14, "proto=\"" + proto + "\"");
}

}  // namespace

TEST_CASE("the shipped programs pass every check and give every rank the exact reduction", "[msccl]") {
  struct Case {
    std::string file, platform;
  };
  for (const Case& c :
       {Case{"ring_allreduce_8.xml", kCluster8}, Case{"allpairs_allreduce_8.xml", kCluster8},
        Case{"hierarchical_allreduce_2x4.xml", kNodes2x4}, Case{"ring_allgather_8.xml", kCluster8}})
    for (const std::string op : {"sum", "avg", "max"}) {
      INFO(c.file << " op " << op);
      const auto e = check_reduction(
          scenario(8, c.platform, fmt::format("{{name: msccl, op: {}, program: {}}}", op, kPrograms + c.file),
                   "{size: 4MiB, proxy_dim: 1003}"));
      CHECK(e.checked_vectors == 16);
      CHECK(e.max_abs_error <= summation_tolerance(8, e.reference_scale));
      if (op == "max") CHECK(e.max_abs_error == 0);
    }
}

TEST_CASE("a shipped program is found by its bare name, from any folder", "[msccl]") {
  const auto dir = fresh_dir("msccl-name");
  write_file(dir / "s.yaml", scenario(8, kCluster8, "{name: msccl, program: ring_allreduce_8}"));
  const CliResult r = run_aggsim({"validate", "s.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  write_file(dir / "s.yaml", scenario(8, kCluster8, "{name: msccl, program: ring_allreduce_88}"));
  const CliResult typo = run_aggsim({"validate", "s.yaml"}, dir);
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("program file not found") && Catch::Contains("ring_allreduce_8"));
  fs::remove_all(dir);
}

TEST_CASE("the broken program is refused naming the first wrong rank, chunk and what it holds", "[msccl]") {
  // Rank 5 reduces chunk 5 from its own input and the other ranks' copies, but reads rank 2's slot
  // where rank 6's should be; the all-pairs broadcast then gives every rank that chunk: rank 0 is
  // the first wrong rank, chunk 5 its first wrong chunk.
  const auto dir = fresh_dir("msccl-broken");
  write_file(
      dir / "s.yaml",
      scenario(8, kCluster8, "{name: msccl, program: " + kPrograms + "broken_allpairs_allreduce_8.xml}"));
  for (const std::string verb : {"validate", "run"}) {
    std::vector<std::string> args = {verb, "s.yaml"};
    if (verb == "run") args.insert(args.end(), {"--out", "out"});
    const CliResult r = run_aggsim(args, dir);
    CHECK(r.exit_code == 2);
    // The line is rank 5's step that adds rank 2's chunk where rank 6's belongs.
    CHECK(r.err == "aggsim: error: " + kPrograms +
                       "broken_allpairs_allreduce_8.xml:316: step: the program does not compute an allreduce: "
                       "rank 0 output chunk 5 misses rank 6; holds rank 2 twice; the first wrong value came "
                       "from gpu 5 tb 7 step 5 (line 316)\n");
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  fs::remove_all(dir);
}

TEST_CASE("wrong_result: run runs the broken program, records the verdict and shows the error", "[msccl]") {
  const auto dir = fresh_dir("msccl-wrong");
  for (const std::string program : {"broken_allpairs_allreduce_8.xml", "allpairs_allreduce_8.xml"}) {
    write_file(dir / "s.yaml",
               scenario(8, kCluster8,
                        "{name: msccl, op: avg, wrong_result: run, program: " + kPrograms + program + "}",
                        "{size: 1MiB, proxy_dim: 800}"));
    const CliResult r = run_aggsim({"run", "s.yaml", "--out", "out", "-q", "--force"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
    if (program == "allpairs_allreduce_8.xml") {
      CHECK(j["msccl_verdict"] == "exact");
      CHECK(j["agg_error"].get<double>() < 1e-6);
    } else {
      CHECK(j["msccl_verdict"] ==
            kPrograms + program +
                ":316: step: the program does not compute an allreduce: rank 0 output chunk 5 "
                "misses rank 6; holds rank 2 twice; the first wrong value came from gpu 5 tb 7 step 5 "
                "(line 316)");
      // Chunk 5 of every rank holds 2 x2 - x6 more than the sum: an error of the inputs' size.
      CHECK(j["agg_error"].get<double>() > 0.01);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("the verdict names a chunk that holds another rank's chunk, or data nobody wrote", "[msccl]") {
  // 2-GPU ring whose gpu 1 forwards chunk 0 where the ring owes chunk 1: its chunk 1 then reduces
  // gpu 0's chunk 0 with its own chunk 1.
  check_refused(
      edit(kTwoGpuRing, 11, "srcoff=\"1\"", "srcoff=\"0\""),
      "prog.xml:5: step: the program does not compute an allreduce: rank 0 output chunk 1 misses rank 1; "
      "holds rank 1's chunk 0; the first wrong value came from gpu 0 tb 0 step 1 (line 5)");
  // An out-of-place all-reduce that never writes its output's chunk 1.
  std::string text = kTwoGpuRing;
  text = edit(text, 1, "inplace=\"1\"", "inplace=\"0\"");
  for (const int line : {2, 9}) text = edit(text, line, "o_chunks=\"0\"", "o_chunks=\"2\"");
  for (const int line : {5, 12}) text = edit(text, line, "dstbuf=\"i\"", "dstbuf=\"o\"");
  for (const int line : {6, 13}) text = edit(text, line, "dstbuf=\"i\"", "dstbuf=\"o\"");
  CHECK(check_program(text).result.exit_code == 0);  // each rank receives one chunk, reduces the other
  text = edit(text, 6, "type=\"r\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"0\"",
              "type=\"r\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"s\" dstoff=\"0\"");
  text = edit(text, 2, "s_chunks=\"0\"", "s_chunks=\"1\"");
  check_refused(text, "prog.xml:2: step: the program does not compute an allreduce: rank 0 output chunk 0 "
                      "holds undefined data; no step writes it");
}

TEST_CASE("an all-gather that stores a chunk in the wrong place is named by what it holds", "[msccl]") {
  const std::string ring = read_file(kPrograms + "ring_allgather_8.xml");
  const auto rank3 = [&](const std::string& from, const std::string& to) {
    std::string text = ring;
    const auto hit = text.find(from, text.find("<gpu id=\"3\""));
    REQUIRE(hit != std::string::npos);
    return text.replace(hit, from.size(), to);
  };
  // Rank 3's last receive (rank 4's chunk) lands on rank 2's, and its output chunk 4 stays unwritten.
  check_refused(
      rank3("type=\"r\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"4\"",
            "type=\"r\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"2\""),
      "prog.xml:51: step: the program does not compute an allgather: rank 3 output chunk 2 misses rank 2; "
      "holds rank 4; gpu 3 tb 0 step 8 (line 51) wrote it last",
      8, kCluster8);
  // Rank 3 stores rank 2's chunk where rank 1's comes next: chunk 2 is never written.
  check_refused(rank3("type=\"rcs\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"2\"",
                      "type=\"rcs\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"1\""),
                "rank 3 output chunk 2 holds undefined data", 8, kCluster8);
}

TEST_CASE("validate runs the schedule with the runtime's slots and names every blocked threadblock",
          "[msccl]") {
  // Simple: a connection holds 4 slices and a call is 2: two sends fit, a third blocks both GPUs.
  CHECK(check_program(exchange_program(2, "Simple")).result.exit_code == 0);
  check_refused(
      exchange_program(3, "Simple"),
      "prog.xml:6: step: the program deadlocks (Simple: a connection holds 4 slices, a call sends 2): "
      "gpu 0 tb 0 step 2 (s, line 6) waits for a free slot towards gpu 1 on channel 0 (its 4 slices are "
      "taken); gpu 1 tb 0 step 2 (s, line 19) waits for a free slot towards gpu 0 on channel 0 (its 4 "
      "slices are taken)");
  // LL: 8 slots of one call each, so 8 sends ahead fit and a ninth blocks.
  CHECK(check_program(exchange_program(3, "LL")).result.exit_code == 0);
  CHECK(check_program(exchange_program(8, "LL")).result.exit_code == 0);
  check_refused(exchange_program(9, "LL"),
                "step: the program deadlocks (LL: a connection holds 8 slices, a call sends 1)");
  // What passes validate runs to the end in the simulation with the same slots.
  const Checked ran = check_program(exchange_program(2, "Simple"), "run");
  CHECK(ran.result.exit_code == 0);
}

TEST_CASE("receives nobody feeds first, and steps cut into calls by size, deadlock", "[msccl]") {
  // Both GPUs receive before they send.
  const std::string text = exchange_program(1, "Simple", true);
  check_refused(
      text,
      "prog.xml:4: step: the program deadlocks (Simple: a connection holds 4 slices, a call sends 2): gpu "
      "0 tb 0 step 0 (r, line 4) waits for a message from gpu 1 on channel 0; gpu 1 tb 0 step 0 (r, line "
      "11) waits for a message from gpu 0 on channel 0");
  // A ring moving two chunks per step: at small sizes a step is one call and the ring runs; at
  // large sizes the runtime cuts it into calls of one chunk (maxAllowedCount 1), the first send
  // fills the connection and every rank waits for the next: refused at every size.
  check_refused(
      read_file(kData + "ring_allreduce_4_cnt2.xml"),
      "step: the program deadlocks (Simple: a connection holds 4 slices, a call sends 2, a call carries at "
      "most 1 chunk): gpu 0 tb 0 step 1 (rrs, line 5) waits for a free slot towards gpu 1 on channel 0",
      4);
}

TEST_CASE("static checks name dependency cycles, unmatched connections and unsignalled dependencies",
          "[msccl]") {
  const std::string head =
      "<algo name=\"c\" proto=\"Simple\" nchannels=\"2\" nchunksperloop=\"1\" ngpus=\"1\" coll=\"allreduce\" "
      "inplace=\"1\">\n  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"0\" s_chunks=\"0\">\n";
  const std::string cycle = head + "    <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n" +
                            step(0, "nop", "", "", 1, 0, 1) + "    </tb>\n" +
                            "    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n" +
                            step(0, "nop", "", "", 0, 0, 1) + "    </tb>\n  </gpu>\n</algo>\n";
  check_refused(
      cycle,
      "prog.xml:4: step.depid: dependency cycle on gpu 0: tb 0 step 0 waits for tb 1 step 0; tb 1 step 0 "
      "waits for tb 0 step 0 (each threadblock runs its steps in order)",
      1);
  check_refused(
      edit(cycle, 7, "hasdep=\"1\"", "hasdep=\"0\""),
      "prog.xml:4: step.deps: gpu 0 threadblock 1 step 0 is waited for but has hasdep=\"0\" (line 7)", 1);
  // gpu 1 receives on channel 1, where gpu 0 sends nothing.
  check_refused(
      edit(kTwoGpuRing, 10, "chan=\"0\"", "chan=\"1\"")
          .replace(kTwoGpuRing.find("nchannels=\"1\""), 13, "nchannels=\"2\""),
      "prog.xml:3: tb.send: gpu 0 threadblock 0 sends 2 messages to gpu 1 on channel 0, and no threadblock "
      "of gpu 1 receives from gpu 0 on channel 0");
  // One chunk sent where two are received.
  check_refused(
      edit(kTwoGpuRing, 4, "cnt=\"1\"", "cnt=\"2\""),
      "prog.xml:4: step.cnt: gpu 0 threadblock 0 step 0 sends 2 chunks to gpu 1 on channel 0, where the "
      "matching receive (gpu 1 threadblock 0 step 1, line 12) takes 1");
}

TEST_CASE("bad program files are input errors with file, line and attribute, exit 2 and nothing written",
          "[msccl]") {
  CHECK(check_program(kTwoGpuRing).result.exit_code == 0);
  check_refused(edit(kTwoGpuRing, 7, "</tb>", ""), "prog.xml:8: malformed XML: mismatched tag");
  check_refused(edit(kTwoGpuRing, 5, " cnt=\"1\"", ""), "prog.xml:5: step.cnt: missing attribute");
  check_refused(
      edit(kTwoGpuRing, 5, "srcoff=\"1\"", "srcoff=\"2\""),
      "prog.xml:5: step.srcoff: chunks 2 to 2 are past the input buffer's 2 chunks (gpu 0 i_chunks=\"2\")");
  check_refused(edit(kTwoGpuRing, 6, "dstoff=\"0\" cnt=\"1\"", "dstoff=\"1\" cnt=\"2\""),
                "prog.xml:6: step.dstoff: chunks 1 to 2 are past the input buffer's 2 chunks");
  check_refused(edit(kTwoGpuRing, 6, "type=\"r\"", "type=\"recv\""),
                "prog.xml:6: step.type: 'recv' is not a step type (s r rcs rrs rrc rrcs cpy re nop)");
  check_refused(edit(kTwoGpuRing, 3, "send=\"1\"", "send=\"2\""),
                "prog.xml:3: tb.send: 2 is outside [-1, 1]");
  check_refused(edit(kTwoGpuRing, 3, "send=\"1\"", "send=\"0\""),
                "prog.xml:3: tb.send: gpu 0 cannot send to itself");
  check_refused(edit(kTwoGpuRing, 3, "chan=\"0\"", "chan=\"0\" color=\"red\""),
                "prog.xml:3: tb.color: unknown attribute (<tb> takes chan, id, recv, send)");
  check_refused(edit(kTwoGpuRing, 1, "proto=\"Simple\"", "proto=\"simple\""),
                "prog.xml:1: algo.proto: 'simple' is not a protocol (Simple, LL128 or LL)");
  check_refused(edit(kTwoGpuRing, 1, "coll=\"allreduce\"", "coll=\"alltoall\""),
                "prog.xml:1: algo.coll: 'alltoall': aggsim runs allreduce and allgather programs");
  check_refused(edit(kTwoGpuRing, 9, "id=\"1\"", "id=\"0\""),
                "prog.xml:9: gpu.id: gpu 0 was already given at line 2");
  check_refused(edit(kTwoGpuRing, 5, "s=\"1\"", "s=\"4\""),
                "prog.xml:5: step.s: 4, but this is step 1 of threadblock 0");
  check_refused(edit(kTwoGpuRing, 4, "<step s=\"0\"", "<op step=\"0\""),
                "prog.xml:4: op: the newer <op>-based format is not read yet");
  check_refused(edit(kTwoGpuRing, 1, "ngpus=\"2\"", "ngpus=\"3\""),
                "prog.xml:1: algo.ngpus: 3 GPUs, but there is no <gpu id=\"2\">");
  check_refused("\xff\xfe", "prog.xml:1:1: the text is not valid UTF-8");
  // The scenario's side: the file must exist, and ranks must equal ngpus.
  const Checked missing = check_program("", "validate", 2, "", "{size: 1MiB}", "nope.xml");
  CHECK(missing.result.exit_code == 2);
  CHECK_THAT(missing.result.err, Catch::Contains("s.yaml:6:44: algorithm.program: program file not found"));
  const std::string eight = kPrograms + "ring_allreduce_8.xml";
  const Checked fewer = check_program("", "run", 4, "", "{size: 1MiB}", eight);
  CHECK(fewer.result.exit_code == 2);
  CHECK_THAT(fewer.result.err,
             Catch::Contains(eight + ":1: algo.ngpus: the program is for 8 GPUs and the scenario "
                                     "has 4 ranks: ranks must equal ngpus"));
  CHECK_FALSE(fewer.wrote_output);
  // ngpus above what the platform holds: the ranks it needs do not fit.
  const Checked above = check_program("", "run", 8, "{topology: cluster, hosts: 4}", "{size: 1MiB}", eight);
  CHECK(above.result.exit_code == 2);
  CHECK_THAT(above.result.err, Catch::Contains("s.yaml:2:8: ranks: 8 ranks do not fit on the 4 hosts"));
  CHECK_FALSE(above.wrote_output);
}

TEST_CASE("a list of programs: each call runs the first whose size range holds it, and gaps are refused",
          "[msccl]") {
  const auto dir = fresh_dir("msccl-list");
  const auto ranged = [](std::string text, const std::string& range) {
    return text.replace(text.find(" inplace="), 0, " " + range);
  };
  write_file(dir / "small.xml",
             ranged(read_file(kPrograms + "ring_allreduce_8.xml"), "minBytes=\"0\" maxBytes=\"1048576\""));
  write_file(dir / "large.xml",
             ranged(read_file(kPrograms + "allpairs_allreduce_8.xml"), "minBytes=\"1048577\""));
  write_file(dir / "gap.xml",
             ranged(read_file(kPrograms + "allpairs_allreduce_8.xml"), "minBytes=\"2097152\""));
  const std::string yaml =
      scenario(8, kCluster8, "{name: msccl, program: [small.xml, large.xml]}", "{size: 4MiB, proxy_dim: 64}");
  write_file(dir / "s.yaml", yaml);
  for (const auto& [size, program] : std::vector<std::pair<std::string, std::string>>{
           {"1MiB", "ring_allreduce_8gpus_1ch"}, {"1048580B", "allpairs_allreduce_8gpus"}}) {
    const CliResult r =
        run_aggsim({"run", "s.yaml", "--out", "out-" + size, "-q", "--set", "model.size=" + size}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(read_file(dir / ("out-" + size) / "summary.json"));
    CHECK(j["msccl_program"] == "ring_allreduce_8gpus_1ch, allpairs_allreduce_8gpus");
    CHECK(j["msccl_calls"].size() == 1);
    CHECK(j["msccl_calls"][program] == 2);
  }
  write_file(dir / "g.yaml", scenario(8, kCluster8, "{name: msccl, program: [small.xml, gap.xml]}"));
  const CliResult r = run_aggsim({"validate", "g.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("g.yaml:6:35: algorithm.program: no program takes calls of 1048577 to 2097151 "
                             "bytes (minBytes, maxBytes)"));
  fs::remove_all(dir);
}

TEST_CASE(
    "summary.json and trace.json show the program, its steps and bytes per connection, a lane per "
    "threadblock",
    "[msccl]") {
  const auto dir = fresh_dir("msccl-out");
  write_file(dir / "s.yaml",
             scenario(8, kCluster8, "{name: msccl, program: " + kPrograms + "ring_allreduce_8.xml}",
                      "{size: 8MiB, proxy_dim: 64}") +
                 "output: {trace: true}\n");
  const CliResult r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(j["msccl_program"] == "ring_allreduce_8gpus_1ch");
  // 8 MiB: chunks of 1 MiB, one loop iteration; 8 ranks x 15 steps per call, 2 calls.
  CHECK(j["msccl_steps_executed"] == 8 * 15 * 2);
  // Each connection: 14 sends of a 1 MiB chunk per call, in 2 slices (Simple), 2 calls.
  REQUIRE(j["msccl_bytes_per_connection"].size() == 8);
  for (const auto& [key, bytes] : j["msccl_bytes_per_connection"].items()) CHECK(bytes == 2.0 * 14 * 1048576);
  CHECK(j["bytes_sent"] == 8 * 2 * 14 * 1048576);
  const std::string trace = read_file(dir / "out" / "trace.json");
  CHECK_THAT(trace, Catch::Contains("\"name\":\"tb 0 (send 1, recv 7, channel 0)\""));
  CHECK_THAT(trace, Catch::Contains("\"name\":\"rrcs\""));
  fs::remove_all(dir);
}

TEST_CASE("an msccl ring times within 15% of ring_allreduce and of nccl_allreduce's ring",
          "[msccl][timing]") {
  // Against NCCL's ring with the same protocol and channels: the same pieces, slots and protocol
  // costs, so the times agree closely at every size.
  for (const std::string size : {"1MiB", "64MiB"})
    for (const auto& [proto, key] : std::vector<std::pair<std::string, std::string>>{
             {"Simple", "simple"}, {"LL128", "ll128"}, {"LL", "ll"}})
      for (const int channels : {1, 2}) {
        const auto dir = fresh_dir("msccl-proto");
        write_file(
            dir / "p.xml",
            with_proto(read_file(kData + fmt::format("ring_allreduce_8_{}ch_first1.xml", channels)), proto));
        const double msccl =
            step_time(8, kCluster8, "{name: msccl, program: " + (dir / "p.xml").string() + "}", size);
        const double nccl = step_time(
            8, kCluster8,
            fmt::format("{{name: nccl_allreduce, nccl_algorithm: ring, protocol: {}, channels: {}}}", key,
                        channels),
            size);
        fs::remove_all(dir);
        INFO(size << " " << proto << " " << channels << " channels: msccl " << msccl << " s, nccl " << nccl
                  << " s");
        CHECK(std::abs(msccl / nccl - 1) <= 0.15);
      }
  // Against ring_allreduce (no protocol costs): where bandwidth dominates (Simple, large calls).
  for (const std::string size : {"64MiB", "256MiB"})
    for (const std::string& platform : {kCluster8, kNodes2x4}) {
      const double msccl =
          step_time(8, platform, "{name: msccl, program: " + kPrograms + "ring_allreduce_8.xml}", size);
      const double ring = step_time(8, platform, "{name: ring_allreduce}", size);
      INFO(size << " on " << platform << ": msccl " << msccl << " s, ring_allreduce " << ring << " s");
      CHECK(std::abs(msccl / ring - 1) <= 0.15);
    }
}

TEST_CASE("where the reduction order is the same the results are bit-identical", "[msccl][bits]") {
  const auto bits = [](const std::string& algorithm, const std::string& op) {
    return result_bits(
        scenario(8, kCluster8, "{" + algorithm + ", op: " + op + "}", "{size: 1MiB, proxy_dim: 1000}"));
  };
  // The shipped ring reduces chunk c from rank c on, as ring_allreduce does.
  for (const std::string op : {"sum", "avg"})
    CHECK(bits("name: msccl, program: " + kPrograms + "ring_allreduce_8.xml", op) ==
          bits("name: ring_allreduce", op));
  // NCCL's ring starts chunk c at rank c + 1 (2 channels: chunk c of channel h is piece h * 8 + c).
  const std::string nccl = "name: nccl_allreduce, nccl_algorithm: ring, protocol: simple, channels: 2";
  CHECK(bits("name: msccl, program: " + kData + "ring_allreduce_8_2ch_first1.xml", "sum") ==
        bits(nccl, "sum"));
  // A different order gives different bits: the comparison can fail.
  CHECK(bits("name: msccl, program: " + kPrograms + "ring_allreduce_8.xml", "sum") != bits(nccl, "sum"));
}

TEST_CASE("calibrate and compare with an msccl scenario refuse measurements at another rank count",
          "[msccl]") {
  const auto dir = fresh_dir("msccl-compare");
  write_file(dir / "s.yaml",
             scenario(8, kCluster8, "{name: msccl, program: " + kPrograms + "ring_allreduce_8.xml}",
                      "{size: 1MiB, math: off}"));
  write_file(dir / "m.csv",
             "collective,ranks,nodes,bytes,time\nall_reduce,8,8,1048576,0.0003\n"
             "all_reduce,4,4,1048576,0.0002\n");
  for (const std::string verb : {"compare", "calibrate"}) {
    std::vector<std::string> args = {verb, "s.yaml", "m.csv"};
    if (verb == "calibrate") args.insert(args.end(), {"--out", "cal.yaml"});
    const CliResult r = run_aggsim(args, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err,
               Catch::Contains("m.csv:3: all_reduce on 4 ranks: algorithm msccl runs on exactly 8 ranks (its "
                               "program's ngpus): keep only measurements at 8 ranks"));
    CHECK_FALSE(fs::exists(dir / "cal.yaml"));
  }
  fs::remove_all(dir);
}
