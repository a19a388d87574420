// NCCL settings a log states (its launch line, NCCL's "set by environment" lines): read as NCCL
// reads them, followed where the model can, and said where it cannot.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "sim/calibrate/measurement.hpp"
#include "algorithms/nccl/calibration/nccl_env.hpp"
#include "sim/core/error.hpp"
#include "support/cli.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

NcclEnvChoice follow(const std::map<std::string, std::string>& values,
                     const std::string& collective = "all_reduce") {
  std::map<std::string, NcclSetting> settings;
  for (const auto& [name, value] : values) settings[name] = {value, "x.log:1"};
  return follow_nccl_settings(settings, collective);
}

std::string notes(const NcclEnvChoice& c) {
  std::string text;
  for (const auto& [where, what] : c.not_followed) text += what + "\n";
  return text;
}

}  // namespace

TEST_CASE("NCCL settings are read from launch lines as people write them", "[readers][nccl_env]") {
  // The launch line of tests/data/calibration/h100_ib400_ring_ctas24_2node_all_reduce.log.
  CHECK(nccl_settings_in_command("mpirun -np 16 -N 8 --hostfile /tmp/2hosts.txt -x LD_LIBRARY_PATH -x "
                                 "NCCL_ALGO=Ring -x NCCL_MIN_CTAS=24 -x NCCL_IB_QPS_PER_CONNECTION=2 "
                                 "./build/all_reduce_perf -b 1M -e 8G") ==
        Pairs{{"NCCL_ALGO", "Ring"}, {"NCCL_MIN_CTAS", "24"}, {"NCCL_IB_QPS_PER_CONNECTION", "2"}});
  CHECK(nccl_settings_in_command("$ NCCL_PROTO=Simple NCCL_ALGO=ring,tree ./build/all_reduce_perf -g 8") ==
        Pairs{{"NCCL_PROTO", "Simple"}, {"NCCL_ALGO", "ring,tree"}});
  CHECK(nccl_settings_in_command("srun --export=ALL,NCCL_ALGO=Tree,NCCL_MAX_NCHANNELS=8 ./all_reduce_perf") ==
        Pairs{{"NCCL_ALGO", "Tree"}, {"NCCL_MAX_NCHANNELS", "8"}});
  CHECK(nccl_settings_in_command("mpiexec -genv NCCL_ALGO Ring -n 16 ./all_reduce_perf") ==
        Pairs{{"NCCL_ALGO", "Ring"}});
  CHECK(nccl_settings_in_command("export NCCL_PROTO=\"LL128\"") == Pairs{{"NCCL_PROTO", "LL128"}});
  // The Alps logs' shell trace (tests/data/calibration/alps_gh200_*): a quoted value with a space is
  // cut at it, the same either way it is quoted; nccl-tests' own NCCL_TESTS_* are not NCCL's.
  CHECK(nccl_settings_in_command("+ export 'NCCL_NET=AWS Libfabric'") == Pairs{{"NCCL_NET", "AWS"}});
  CHECK(nccl_settings_in_command("+ NCCL_NET='AWS Libfabric'") == Pairs{{"NCCL_NET", "AWS"}});
  CHECK(nccl_settings_in_command("+ export NCCL_TESTS_DEVICE=0").empty());
  CHECK(nccl_settings_in_command("NCCL_ALGO=\"allreduce:tree;broadcast:ring\" ./x") ==
        Pairs{{"NCCL_ALGO", "allreduce:tree;broadcast:ring"}});
  // Not assignments: a name alone (mpirun -x exports the shell's value, which the log does not show),
  // lower-case names, other variables.
  CHECK(
      nccl_settings_in_command("mpirun -x NCCL_ALGO -x nccl_algo=ring -x CUDA_VISIBLE_DEVICES=0,1").empty());

  CHECK(nccl_setting_in_message("NCCL_ALGO set by environment to ring,tree") ==
        std::make_pair(std::string("NCCL_ALGO"), std::string("ring,tree")));
  CHECK(nccl_setting_in_message("NCCL_IB_QPS_PER_CONNECTION set by environment to 2.") ==
        std::make_pair(std::string("NCCL_IB_QPS_PER_CONNECTION"), std::string("2")));
  CHECK_FALSE(nccl_setting_in_message("Using NCCL_ALGO set by environment to ring"));
  CHECK_FALSE(nccl_setting_in_message("Channel 00/16 : 0 1 2 3"));
}

TEST_CASE("NCCL_ALGO and NCCL_PROTO are followed where they leave one choice, as NCCL parses them",
          "[readers][nccl_env]") {
  CHECK(follow({{"NCCL_ALGO", "Ring"}}).algorithm == "ring");
  CHECK(follow({{"NCCL_ALGO", "NVLSTree"}}).algorithm == "nvls_tree");
  CHECK(follow({{"NCCL_PROTO", "LL128"}}).protocol == "ll128");
  // "^" disables: with NVLS, NVLS-Tree and Tree off (and CollNet, which the model lacks), ring is left.
  CHECK(follow({{"NCCL_ALGO", "^nvls,nvlstree,tree,collnetdirect"}}).algorithm == "ring");
  // NCCL 2.24's per-collective form; a collective it does not name keeps NCCL's choice.
  const std::map<std::string, std::string> per = {{"NCCL_ALGO", "allreduce:tree;broadcast:ring"}};
  CHECK(follow(per).algorithm == "tree");
  CHECK(follow(per, "broadcast").algorithm == "ring");
  CHECK(follow(per, "all_gather").algorithm.empty());
  CHECK(notes(follow(per, "all_gather")).empty());
  CHECK(follow({{"NCCL_ALGO", "allreduce:tree;ring"}}, "all_gather").algorithm == "ring");

  // What leaves NCCL a choice among some, or names nothing NCCL knows, is said, not followed.
  auto some = follow({{"NCCL_ALGO", "ring,tree"}});
  CHECK(some.algorithm.empty());
  CHECK(notes(some) ==
        "NCCL_ALGO=ring,tree (leaves NCCL a choice among ring, tree; the model chooses "
        "among all it has, or runs one forced)\n");
  auto bad = follow({{"NCCL_PROTO", "LL64"}});
  CHECK(bad.protocol.empty());
  CHECK(notes(bad) == "NCCL_PROTO=LL64 ('LL64' names nothing NCCL knows)\n");
  CHECK(follow({{"NCCL_ALGO", "ring,tree,nvls,nvlstree"}}).not_followed.empty());  // all: NCCL's choice
}

TEST_CASE("NCCL's channel bounds are followed, and settings of the machine are named as not followed",
          "[readers][nccl_env]") {
  auto c = follow({{"NCCL_MIN_CTAS", "24"},
                   {"NCCL_MIN_NCHANNELS", "16"},
                   {"NCCL_MAX_CTAS", "30"},
                   {"NCCL_MAX_NCHANNELS", "28"},
                   {"NCCL_DEBUG", "INFO"},
                   {"NCCL_DEBUG_SUBSYS", "TUNING"}});
  CHECK(c.min_channels == 24);
  CHECK(c.max_channels == 28);
  CHECK(c.not_followed.empty());
  auto m = follow({{"NCCL_IB_QPS_PER_CONNECTION", "2"}, {"NCCL_MIN_NCHANNELS", "many"}});
  CHECK(m.min_channels == 0);
  CHECK(notes(m) ==
        "NCCL_IB_QPS_PER_CONNECTION=2 (the simulated machine is the scenario's)\n"
        "NCCL_MIN_NCHANNELS=many (not a whole number of channels from 1)\n");
}

TEST_CASE("an nccl-tests log gives each row its NCCL settings, and refuses two values of one",
          "[readers][nccl_env]") {
  const std::string head =
      "mpirun -np 2 -x NCCL_ALGO=Ring -x NCCL_IB_HCA=mlx5_0 ./build/all_reduce_perf -b 1M -e 2M\n"
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid 1 on n device  0 [0x1] GPU\n"
      "#  Rank  1 Group  0 Pid 1 on n device  1 [0x1] GPU\n"
      "n:1:1 [0] NCCL INFO NCCL_ALGO set by environment to ring\n"
      "n:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
      "n:1:1 [0] NCCL INFO NCCL_MIN_NCHANNELS set by environment to 4.\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
      "algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    100.0   10.49 "
      "  "
      "10.49      0\n";
  const MeasurementFile f = parse_measurements(head, "x.log", {});
  REQUIRE(f.rows.size() == 1);
  CHECK(f.rows[0].env.algorithm == "ring");
  CHECK(f.rows[0].env.algorithm_where == "x.log:1");  // the first line that states it
  CHECK(f.rows[0].env.protocol == "simple");
  CHECK(f.rows[0].env.protocol_where == "x.log:6");
  CHECK(f.rows[0].env.min_channels == 4);
  REQUIRE(f.rows[0].env.not_followed.size() == 1);
  CHECK(f.rows[0].env.not_followed[0].first == "x.log:1");
  CHECK(f.rows[0].env.not_followed[0].second ==
        "NCCL_IB_HCA=mlx5_0 (the simulated machine is the scenario's)");

  // A setting the model does not follow may differ from host to host (an interface's name).
  std::string per_host = head;
  per_host.insert(per_host.find("#       size"),
                  "m:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_3\n");
  CHECK(parse_measurements(per_host, "x.log", {}).rows[0].env.not_followed.size() == 1);

  std::string twice = head;
  twice.replace(twice.find("to ring"), 7, "to Tree");
  try {
    parse_measurements(twice, "x.log", {});
    FAIL("two values of NCCL_ALGO in one log were read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "x.log:5: NCCL_ALGO=Tree here, but x.log:1 says NCCL_ALGO=Ring: keep runs of one setting per file");
  }
  // A file that is no log (no table) echoes none of its settings: it is refused as no log.
  try {
    parse_measurements("NCCL_ALGO=secret1\nNCCL_ALGO=secret2\n", "env.txt", {});
    FAIL("a file without a table was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("secret") == std::string::npos);
  }
}
