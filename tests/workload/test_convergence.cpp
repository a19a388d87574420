// Published orderings reproduced on the shipped convergence scenarios (fixed seed): PowerSGD
// rank 2 ends close to uncompressed SGD (Vogels et al. 2019), and top-k 1 % needs error feedback
// (Stich et al. 2018; Karimireddy et al. 2019).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"

using namespace aggsim::test;

namespace {

struct RunEnd {
  double final_loss = 0;
  double bytes_sent = 0;
};

RunEnd run_scenario(const std::string& scenario, const std::vector<std::string>& sets) {
  const auto dir = fresh_dir("convergence");
  std::vector<std::string> args = {"run", scenario, "--out", (dir / "out").string(), "-q"};
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  const auto r = run_aggsim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  return {j["final_loss"].get<double>(), j["bytes_sent"].get<double>()};
}

}  // namespace

TEST_CASE("PowerSGD rank 2 ends within a few percent of uncompressed all-reduce", "[workload][convergence]") {
  const auto powersgd = run_scenario("scenarios/convergence_powersgd.yaml", {});
  const auto dense = run_scenario("scenarios/convergence_powersgd.yaml", {"compression={name: none}"});
  CHECK(powersgd.final_loss <= 1.05 * dense.final_loss);
  CHECK(powersgd.bytes_sent < 0.05 * dense.bytes_sent);
}

TEST_CASE("top-k 1% without error feedback ends clearly worse than with it", "[workload][convergence]") {
  const auto with_ef = run_scenario("scenarios/convergence_topk.yaml", {});
  const auto without = run_scenario("scenarios/convergence_topk.yaml", {"compression.error_feedback=false"});
  CHECK(without.final_loss > 1.1 * with_ef.final_loss);
  CHECK(with_ef.bytes_sent == without.bytes_sent);
}
