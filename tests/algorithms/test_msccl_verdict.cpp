// The MSCCL verdict as a proof: each output chunk compared as the exact multiset of input chunks it
// sums (no fingerprint that can wrap), races between threadblocks found from the order the program
// guarantees, the line of the step that made a result wrong, a cost that follows the steps and not
// the chunks they move, and what `aggsim validate` prints of it (algorithms/msccl/README.md).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "algorithms/msccl/program.hpp"
#include "algorithms/msccl/schedule.hpp"
#include "msccl_fixture.hpp"
#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;
using namespace aggsim::test::msccl;
namespace fs = std::filesystem;

namespace {

const std::string kRegressions = kSource + "/tests/fuzz/regressions/msccl_program/";

// Two GPUs, one chunk each. GPU 0's threadblock 0 copies its input to s[0] and sends it; GPU 1 adds
// its own and sends the sum back, which GPU 0's threadblock 1 (`tb1`, its steps) receives.
std::string chained_program(const std::string& tb1) {
  return "<algo name=\"chain\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"2\" "
         "coll=\"allreduce\" inplace=\"1\">\n"
         "  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"0\" s_chunks=\"2\">\n"
         "    <tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n" +
         step(0, "cpy", "i0", "s0") + step(1, "s", "i0", "") +
         "    </tb>\n"
         "    <tb id=\"1\" send=\"-1\" recv=\"1\" chan=\"0\">\n" +
         tb1 +
         "    </tb>\n"
         "  </gpu>\n"
         "  <gpu id=\"1\" i_chunks=\"1\" o_chunks=\"0\" s_chunks=\"0\">\n"
         "    <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n" +
         step(0, "rrcs", "i0", "i0") +
         "    </tb>\n"
         "  </gpu>\n"
         "</algo>\n";
}

// Two GPUs exchanging `steps` steps of `cnt` chunks each: each GPU alternately sends its input and
// receives the other's, adding its own into its output (an exact all-reduce).
std::string exchange_steps(int steps, int cnt) {
  std::string text = fmt::format(
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"{}\" ngpus=\"2\" "
      "coll=\"allreduce\" "
      "inplace=\"0\">\n",
      cnt);
  for (int g = 0; g < 2; ++g) {
    text += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"0\">\n", g, cnt, cnt);
    text += fmt::format("    <tb id=\"0\" send=\"{}\" recv=\"{}\" chan=\"0\">\n", 1 - g, 1 - g);
    for (int s = 0; s < steps; ++s)
      text += (s + g) % 2 == 0 ? step(s, "s", "i0", "", -1, -1, 0, cnt)
                               : step(s, "rrc", "i0", "o0", -1, -1, 0, cnt);
    text += "    </tb>\n  </gpu>\n";
  }
  return text + "</algo>\n";
}

long long check_work(const std::string& text) {
  return verify_msccl_program(read_msccl_program_text(text, "prog.xml")).work;
}

}  // namespace

TEST_CASE("the verdict counts exactly: a result doubled 64 times is not the sum a 64-bit count wraps to",
          "[msccl][verdict]") {
  // A 4-GPU ring whose GPU 0 then copies its result x to scratch, doubles it 64 times and adds it back:
  // x (1 + 2^64). A 64-bit fingerprint of the sum wrapped back to x's and called it exact.
  const std::string text = read_file(kRegressions + "ring4-doubled-64-times.xml");
  check_refused(
      text,
      "prog.xml:12: step: the program does not compute an allreduce: rank 0 output chunk 0 holds rank 0 "
      "2^64 - 1 or more times, rank 1 2^64 - 1 or more times, rank 2 2^64 - 1 or more times, rank 3 "
      "2^64 - 1 or more times; the first wrong value came from gpu 0 tb 0 step 8 (line 12)",
      4);
  // Run anyway, the verdict is recorded as wrong, and the math shows a result 2^64 times too large.
  const auto dir = fresh_dir("msccl-doubled");
  write_file(dir / "prog.xml", text);
  write_file(dir / "s.yaml", scenario(4, "{topology: cluster, hosts: 4}",
                                      "{name: msccl, op: sum, wrong_result: run, program: prog.xml}",
                                      "{size: 1MiB, proxy_dim: 64}"));
  const CliResult r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK_THAT(j["msccl_verdict"].get<std::string>(),
             Catch::Contains("prog.xml:12: step: the program does not"));
  CHECK(j["agg_error"].get<double>() > 1e18);
  fs::remove_all(dir);
}

TEST_CASE("threadblocks touching a chunk in an order the program leaves open race, both steps named",
          "[msccl][verdict]") {
  // GPU 0's threadblock 1 copies s[0] into its result while threadblock 0 receives into s[0], with
  // no dependency between them (its nop waits for step 5, not 6): the verdict's run happened to see
  // the right value, the timed run the old one.
  const std::string racy = read_file(kRegressions + "ring4-scratch-copy-race.xml");
  check_refused(
      racy,
      "prog.xml:14: step: the program races: gpu 0 tb 1 step 1 (line 14) reads s[0] while gpu 0 tb 0 "
      "step 6 (line 10) writes it, with no dependency (nor chain of messages) between them",
      4);
  // Waiting for the receive itself orders them: no race, and the result is exact.
  const std::string ordered =
      edit(edit(racy, 10, "hasdep=\"0\"", "hasdep=\"1\""), 13, "deps=\"5\"", "deps=\"6\"");
  const Checked run = check_program(ordered, "run", 4, "", "{size: 1MiB, proxy_dim: 64}");
  INFO(run.result.err);
  CHECK(run.result.exit_code == 0);
  // A chain of messages orders steps of one GPU as a dependency does: threadblock 1 copies s[0] after
  // its receive, which comes after threadblock 0's write through GPU 1.
  CHECK(
      check_program(chained_program(step(0, "r", "", "i0") + step(1, "cpy", "s0", "s1"))).result.exit_code ==
      0);
  // Before its receive, nothing orders the copy after the write; nor two writes.
  check_refused(chained_program(step(0, "cpy", "s0", "s1") + step(1, "r", "", "i0")),
                "prog.xml:8: step: the program races: gpu 0 tb 1 step 0 (line 8) reads s[0] while gpu 0 tb 0 "
                "step 0 (line 4) writes it");
  check_refused(
      chained_program(step(0, "cpy", "i0", "s0") + step(1, "r", "", "i0")),
      "prog.xml:8: step: the program races: gpu 0 tb 1 step 0 (line 8) writes s[0] while gpu 0 tb 0 "
      "step 0 (line 4) writes it");
}

TEST_CASE("checking a program costs its steps and the ranges they cut, not the chunks they move",
          "[msccl][verdict]") {
  // 1,000 steps of 32,768 chunks each way took more than 60 s, chunk by chunk and cut by cut. Each
  // step now costs the ranges of chunks it touches (one here) and the bulk moves of its messages.
  const long long big = check_work(exchange_steps(1000, 32768));
  const long long tenth = check_work(exchange_steps(100, 32768));
  const long long one_chunk = check_work(exchange_steps(1000, 1));
  INFO(big << " " << tenth << " " << one_chunk);
  CHECK(big > 9 * tenth);
  CHECK(big < 11 * tenth);
  // The 71 ways the runtime cuts 32,768-chunk steps into calls are each run (1 for single chunks):
  // at most 71 times the single-chunk cost, where chunk by chunk it would be 32,768 times.
  CHECK(big <= 71 * one_chunk);
  CHECK(big < 2000 * 200);  // 2,000 steps; a per-chunk check visits 65,536,000 chunks
}

TEST_CASE("validate prints an MSCCL program's verdict and the checks it passed", "[msccl][verdict]") {
  const auto dir = fresh_dir("msccl-validate");
  write_file(dir / "s.yaml", scenario(8, kCluster8, "{name: msccl, program: ring_allreduce_8}"));
  CliResult r = run_aggsim({"validate", "s.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("ring_allreduce_8.xml: verdict: correct: every rank ends with the exact "
                                    "allreduce of the 8 ranks' inputs"));
  CHECK_THAT(r.out, Catch::Contains("8 GPUs, 8 threadblocks, 120 steps read") &&
                        Catch::Contains("no deadlock with Simple's connections of 4 slices") &&
                        Catch::Contains("no race (no two threadblocks share a chunk)"));
  write_file(
      dir / "s.yaml",
      scenario(8, kCluster8, "{name: msccl, wrong_result: run, program: broken_allpairs_allreduce_8}"));
  r = run_aggsim({"validate", "s.yaml"}, dir);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("verdict: wrong result at rank 0 chunk 5 (wrong_result: run runs it anyway)"));
  CHECK_THAT(r.out, Catch::Contains("threadblocks share chunks, every shared access ordered"));
  fs::remove_all(dir);
}

TEST_CASE("a file that is not an MSCCL program shows none of its text", "[msccl][verdict][input]") {
  // Any XML file given as a program: its root element (here a secret's name) was echoed.
  const auto dir = fresh_dir("msccl-secret");
  write_file(dir / "s.yaml", scenario(2, "{topology: cluster, hosts: 2}",
                                      "{name: msccl, program: " + kRegressions + "secret-root-element.xml}"));
  for (const std::string verb : {"validate", "run"}) {
    const CliResult r = run_aggsim({verb, "s.yaml"}, dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err,
               Catch::Contains("secret-root-element.xml:2: algo: not an MSCCL program: its first element is "
                               "not <algo> (the file's text is not shown)"));
    CHECK(r.err.find("Zq8SecretHash") == std::string::npos);
    CHECK(r.err.find("REL3") == std::string::npos);
  }
  fs::remove_all(dir);
}
