// Calibration is a capability an algorithm's table entry declares: the simulator's own code (sim/)
// names no algorithm of the registry, and an entry the registry has never seen is planned, fitted
// and checked through its capability alone.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

#include "algorithms/registry.hpp"
#include "sim/calibrate/model_fit.hpp"
#include "sim/calibrate/point_plan.hpp"
#include "sim/core/error.hpp"
#include "sim/scenario/calibration.hpp"
#include "sim/scenario/calibration_key.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

namespace {

// C++ source with its comments blanked out (string, character and raw string literals kept).
std::string source_without_comments(const std::string& s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      out += ' ';
    } else if (s.compare(i, 2, "R\"") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1])))) {
      const std::size_t open = s.find('(', i);
      const std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = s.find(close, open);
      const std::size_t stop = end == std::string::npos ? s.size() : end + close.size();
      out += s.substr(i, stop - i);
      i = stop;
    } else if (s[i] == '"' || (s[i] == '\'' && (i == 0 || !std::isxdigit(static_cast<unsigned char>(s[i - 1]))))) {
      const char quote = s[i];
      out += s[i++];
      while (i < s.size() && s[i] != quote) {
        if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
        out += s[i++];
      }
      if (i < s.size()) out += s[i++];
    } else {
      out += s[i++];
    }
  }
  return out;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Where `text` (comments already blanked) names `name` as a whole word, outside `backticked`
// mentions in documentation strings and outside folder paths ("algorithms/msccl/programs"):
// the line numbers.
std::vector<int> algorithm_namings(const std::string& text, const std::string& name) {
  std::vector<int> lines;
  bool in_backticks = false;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text[i] == '`') in_backticks = !in_backticks;
    if (in_backticks || text.compare(i, name.size(), name) != 0) continue;
    const char before = i > 0 ? text[i - 1] : ' ';
    const char after = i + name.size() < text.size() ? text[i + name.size()] : ' ';
    if (is_name_char(before) || is_name_char(after) || before == '/' || after == '/') continue;
    lines.push_back(line);
  }
  return lines;
}

std::string source_file_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Files that may spell a name the registry also uses, because there it names something else:
// collectives.csv's collective names (CollectiveKind: `parameter_server`'s traffic, `allgather` as
// nccl-tests spells all_gather), and the one verb whose subject is one algorithm (aggsim bench
// times ring_allreduce against the bare SimGrid ring of tests/bench).
const std::map<std::string, std::set<std::string>> kNamesMeaningOtherThings = {
    {"sim/api/collective_call.hpp", {"parameter_server", "allgather"}},
    {"sim/api/collective_call.cpp", {"parameter_server", "allgather"}},
    {"sim/calibrate/nccl_tests_reader.cpp", {"allgather"}},
    {"sim/cli/bench.cpp", {"ring_allreduce"}},
};

}  // namespace

TEST_CASE("the scan for algorithm names finds a name in code and skips comments, docs and paths") {
  CHECK(algorithm_namings(source_without_comments("if (name == \"nccl_allreduce\") return;\n"), "nccl_allreduce") ==
        std::vector<int>{1});
  CHECK(algorithm_namings(source_without_comments("x;\nconst bool ps = sc.algorithm.name != \"parameter_server\";"),
                "parameter_server") == std::vector<int>{2});
  CHECK(algorithm_namings(source_without_comments("// nccl_allreduce here\n/* and nccl_allreduce */ int x;"), "nccl_allreduce")
            .empty());
  CHECK(algorithm_namings(source_without_comments("auto s = \"`fsdp`: the gathers\";"), "fsdp").empty());
  CHECK(algorithm_namings(source_without_comments("auto d = \"algorithms/msccl/programs\";"), "msccl").empty());
  CHECK(algorithm_namings(source_without_comments("auto k = DataKind::msccl_program;"), "msccl").empty());
  CHECK(algorithm_namings(source_without_comments("auto s = \"a // b\"; f(\"msccl\");"), "msccl") == std::vector<int>{1});
}

TEST_CASE("no file of the simulator (sim/) names an algorithm of the registry") {
  const fs::path root = AGGSIM_SOURCE_DIR;
  REQUIRE(algorithm_table().size() >= 10);
  std::vector<std::string> found;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root / "sim")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h") continue;
    ++files;
    const std::string relative = fs::relative(entry.path(), root).generic_string();
    const std::string text = source_without_comments(source_file_text(entry.path()));
    const auto other = kNamesMeaningOtherThings.find(relative);
    for (const AlgorithmInfo& algorithm : algorithm_table()) {
      if (other != kNamesMeaningOtherThings.end() && other->second.count(algorithm.name)) continue;
      for (int line : algorithm_namings(text, algorithm.name))
        found.push_back(fmt::format("{}:{}: {}", relative, line, algorithm.name));
    }
  }
  CHECK(files > 100);
  std::string listed;
  for (const auto& f : found) listed += "\n  " + f;
  INFO("algorithm names in sim/ (declare what differs in the algorithm's table entry instead):" << listed);
  CHECK(found.empty());
}

namespace {

// What of one algorithm's model a file of sim/ may not name: the headers of an algorithm's own folder
// (algorithms/<family>/...) and the NCCL model's types and constants, with the files that may and
// why. The nccl-tests log reader reads what such a log states (NCCL's settings, its INFO lines) with
// the readers that live next to the NCCL model; the log's format is the reader's business, what the
// model makes of it the model's.
const std::map<std::string, std::set<std::string>> kModelWordsAllowed = {
    {"sim/calibrate/measurement.hpp", {"algorithms/nccl/calibration/nccl_env.hpp", "NcclEnvChoice", "NcclSetting"}},
    {"sim/calibrate/nccl_tests_reader.cpp",
     {"algorithms/nccl/calibration/nccl_env.hpp", "algorithms/nccl/calibration/nccl_info_lines.hpp", "NcclSetting"}},
};

// The includes of an algorithm family's folder and the words of NCCL's model in `text` (comments
// blanked): each "line: what".
std::vector<std::pair<int, std::string>> model_knowledge(const std::string& text) {
  std::vector<std::pair<int, std::string>> found;
  const std::regex include(R"re(#\s*include\s*"(algorithms/[a-z_]+/[^"]+)")re");
  const std::regex word(R"re(\b(?:Nccl(?!Tests)\w+|ProtocolCosts|kNccl\w+|nccl_placement)\b|"nccl")re");
  int line = 1;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l); ++line) {
    for (std::sregex_iterator m(l.begin(), l.end(), include), end; m != end; ++m) found.emplace_back(line, (*m)[1]);
    for (std::sregex_iterator m(l.begin(), l.end(), word), end; m != end; ++m) found.emplace_back(line, (*m)[0]);
  }
  return found;
}

}  // namespace

TEST_CASE("the scan for an algorithm's model finds its headers and words in code, not in comments") {
  const auto found = model_knowledge(source_without_comments(
      "#include \"algorithms/nccl/protocol.hpp\"\n#include \"algorithms/registry.hpp\"\n"
      "// NcclAlgorithm in a comment\nconst ProtocolCosts* c; auto k = top.get(\"nccl\");\n"
      "NcclTestsReader r; int n = kNcclMaxChannels;\n"));
  const std::vector<std::pair<int, std::string>> expected = {
      {1, "algorithms/nccl/protocol.hpp"}, {4, "ProtocolCosts"}, {4, "\"nccl\""}, {5, "kNcclMaxChannels"}};
  CHECK(found == expected);
}

TEST_CASE("no file of the simulator (sim/) knows an algorithm's own model") {
  const fs::path root = AGGSIM_SOURCE_DIR;
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(root / "sim")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h") continue;
    const std::string relative = fs::relative(entry.path(), root).generic_string();
    const auto allowed = kModelWordsAllowed.find(relative);
    for (const auto& [line, what] : model_knowledge(source_without_comments(source_file_text(entry.path())))) {
      if (allowed != kModelWordsAllowed.end() && allowed->second.count(what)) continue;
      found.push_back(fmt::format("{}:{}: {}", relative, line, what));
    }
  }
  std::string listed;
  for (const auto& f : found) listed += "\n  " + f;
  INFO("an algorithm's model known in sim/ (declare it in the entry's capability instead):" << listed);
  CHECK(found.empty());
}

namespace {

// A model the registry has never seen: a point's time is hop_s per hop times `hop` plus its bytes
// over 10 GB/s times `inverse_bandwidth`.
struct UnseenModelParameters : ModelParameters {
  std::vector<double> values;
  explicit UnseenModelParameters(std::vector<double> v) : values(std::move(v)) {}
  bool same_as(const ModelParameters& other) const override {
    const auto* o = dynamic_cast<const UnseenModelParameters*>(&other);
    return o && o->values == values;
  }
  std::string what() const override { return "the test model's costs"; }
};

constexpr double kUnseenHopS = 5e-6;
constexpr double kUnseenBytesPerS = 10e9;

// Exact least squares on the probes' linear model (the test's own fit, not NCCL's).
ModelFit unseen_model_fit(const std::vector<double>& measured, const std::vector<double>& at,
                       const std::vector<double>& x0, const std::vector<std::size_t>& candidates,
                       const std::vector<std::vector<double>>& probe, const std::vector<double>& weight) {
  const auto n = static_cast<Eigen::Index>(measured.size()), m = static_cast<Eigen::Index>(candidates.size());
  Eigen::MatrixXd a(n, m);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const double w = weight.empty() ? 1.0 : weight[u];
    b[i] = w * (measured[u] - at[u]);
    for (Eigen::Index k = 0; k < m; ++k) {
      const std::size_t p = candidates[static_cast<std::size_t>(k)];
      a(i, k) = w * (probe[static_cast<std::size_t>(k)][u] - at[u]) / x0[p];
    }
  }
  const Eigen::VectorXd dx = a.colPivHouseholderQr().solve(b);
  ModelFit fit;
  fit.values = x0;
  for (Eigen::Index k = 0; k < m; ++k) {
    fit.values[candidates[static_cast<std::size_t>(k)]] += dx[k];
    fit.identified.push_back(candidates[static_cast<std::size_t>(k)]);
  }
  const Eigen::VectorXd predicted = Eigen::Map<const Eigen::VectorXd>(at.data(), n) + a * dx;
  fit.predicted.assign(predicted.data(), predicted.data() + n);
  fit.weights.assign(measured.size(), 1.0);
  return fit;
}

AlgorithmInfo unseen_entry() {
  AlgorithmInfo info;
  info.name = "test_model_allreduce";
  ModelCalibration model;
  model.names = {"hop", "inverse_bandwidth"};
  model.defaults = {1, 1};
  model.relevant = [](std::size_t, const std::vector<std::string>&, bool, bool) { return true; };
  model.apply = [](const std::vector<double>& v) {
    return AppliedModel{std::make_shared<UnseenModelParameters>(v), 1, 1};
  };
  model.fit = unseen_model_fit;
  model.merge = [](const ModelFit&, const ModelFit& later) { return later; };
  model.report_title = "test model parameters:";
  model.defaults_are = "own";
  model.numbers_are = "the test model's hop and link costs";
  model.models_itself = "models its hops itself";
  model.section = "test_model";
  model.read_section = [](SectionReader& section, std::vector<std::string>& identified) {
    std::vector<double> values = {1, 1};
    if (auto v = section.real("hop", 0, 1e3)) values[0] = *v;
    if (auto v = section.real("inverse_bandwidth", 0, 1e3)) values[1] = *v;
    if (auto ids = section.words("identified", "parameter names")) identified = *ids;
    section.finish();
    return std::make_shared<UnseenModelParameters>(values);
  };
  model.write_section = [](SectionWriter& out, const ModelParameters& parameters,
                           const std::vector<std::string>& identified) {
    const auto* own = dynamic_cast<const UnseenModelParameters*>(&parameters);
    if (!own) return false;
    out.begin_map("test_model", true);
    out.number("hop", own->values[0]);
    out.number("inverse_bandwidth", own->values[1]);
    out.words("identified", identified);
    out.end_map();
    return true;
  };
  info.calibration.model = model;
  info.calibration.plan = [](const std::string& collective, int ranks, std::uint64_t bytes, const std::string&) {
    return CollectivePlan{{"algorithm.variant=" + collective}, bytes * 2, 4, static_cast<double>(bytes) / ranks};
  };
  return info;
}

Measurement unseen_model_point(std::uint64_t bytes, int ranks) {
  Measurement m;
  m.collective = "reduce_scatter";
  m.ranks = ranks;
  m.nodes = 1;
  m.bytes = bytes;
  m.source = fmt::format("test.log:{}", ranks);
  return m;
}

}  // namespace

TEST_CASE("an algorithm the registry has never seen is planned, fitted and checked through its capability") {
  const AlgorithmInfo entry = unseen_entry();
  Scenario base;
  base.algorithm.name = entry.name;
  base.algorithm.entry = &entry;

  // The point plan is the entry's.
  const PointPlan plan = plan_point(base, unseen_model_point(1 << 20, 8));
  CHECK(std::find(plan.sets.begin(), plan.sets.end(), "algorithm.variant=reduce_scatter") != plan.sets.end());
  CHECK(std::find(plan.sets.begin(), plan.sets.end(), "model.size=2097152B") != plan.sets.end());
  CHECK(plan.divisor == 4);
  CHECK(plan.message_bytes == Approx((1 << 20) / 8.0));

  // The fit: points timed by the closed form at hop 2.5 and inverse bandwidth 1.5 are fitted back to
  // them, every point simulated at the fit equals its measured time, and the calibration holds the
  // entry's own parameters.
  std::vector<Measurement> measured;
  std::vector<PointPlan> plans;
  std::vector<int> hops;
  const auto closed_form = [&](std::size_t i, const std::vector<double>& x) {
    return hops[i] * kUnseenHopS * x[0] + static_cast<double>(measured[i].bytes) / kUnseenBytesPerS * x[1];
  };
  for (int ranks : {2, 4, 8, 16})
    for (std::uint64_t bytes : {std::uint64_t{1} << 10, std::uint64_t{1} << 24}) {
      measured.push_back(unseen_model_point(bytes, ranks));
      hops.push_back(ranks - 1);
      plans.push_back(plan_point(base, measured.back()));
    }
  for (std::size_t i = 0; i < measured.size(); ++i) measured[i].time_s = closed_form(i, {2.5, 1.5});
  int simulations = 0;
  const CalibrationSimulator simulate = [&](const Calibration& cal, std::vector<std::string>* choices) {
    ++simulations;
    const auto* x = dynamic_cast<const UnseenModelParameters*>(cal.model.get());
    REQUIRE(x);
    std::vector<double> times;
    for (std::size_t i = 0; i < measured.size(); ++i) times.push_back(closed_form(i, x->values));
    if (choices) choices->assign(measured.size(), "");
    return times;
  };
  const std::vector<double> prior(measured.size(), 1.0);
  Calibration cal;
  std::vector<double> simulated;
  const ModelFitOutcome outcome =
      fit_model_parameters({measured, plans, prior, *entry.calibration.model, simulate}, cal, simulated);
  const auto* fitted = dynamic_cast<const UnseenModelParameters*>(cal.model.get());
  REQUIRE(fitted);
  CHECK(fitted->values[0] == Approx(2.5).epsilon(1e-9));
  CHECK(fitted->values[1] == Approx(1.5).epsilon(1e-9));
  for (std::size_t i = 0; i < measured.size(); ++i) CHECK(simulated[i] == Approx(measured[i].time_s).epsilon(1e-9));
  CHECK(cal.identified == std::vector<std::string>{"hop", "inverse_bandwidth"});
  CHECK(simulations == 4);  // as is, two probes, then the fit confirmed
  CHECK(outcome.text.find("test model parameters:") == 0);
  CHECK(outcome.text.find("hop") != std::string::npos);

  // The calibration file: the entry's section is written and read back through its capability
  // alone; a reader without the entry refuses the section as an unknown key.
  cal.network = "alpha_beta";
  const std::vector<const ModelCalibration*> models = {&*entry.calibration.model};
  const std::string text = calibration_yaml(cal, "test", models);
  CHECK(text.find("test_model: {hop: 2.5, inverse_bandwidth: 1.5, identified: [hop, inverse_bandwidth]}") !=
        std::string::npos);
  const fs::path file = fs::temp_directory_path() / fmt::format("aggsim-capability-{}.yaml", ::getpid());
  std::ofstream(file) << text;
  const Calibration read = load_calibration(file.string(), nullptr, models);
  const auto* reread = dynamic_cast<const UnseenModelParameters*>(read.model.get());
  REQUIRE(reread);
  CHECK(reread->values == std::vector<double>{2.5, 1.5});
  CHECK(read.identified == cal.identified);
  CHECK(!read.model_where.empty());  // where the section was read, for messages
  CHECK_THROWS_WITH(load_calibration(file.string(), nullptr, {}), Catch::Contains("test_model"));
  fs::remove(file);

  // The scenario's checks: factor steps fitted for another algorithm would count its own timing
  // twice; the entry's message says why in its own words.
  Scenario sc = base;
  Calibration steps;
  steps.file = "steps.yaml";
  steps.algorithm = "ring_allreduce";
  steps.algorithm_where = "steps.yaml:3:12";
  steps.intra.steps = {{0, 1.5, 0.8}};
  sc.calibration = steps;
  try {
    check_calibration_family(sc);
    FAIL("factor steps were accepted for a model that fits its own parameters");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_model_allreduce models its hops itself, so they would count twice"));
  }
  sc.calibration = cal;
  sc.calibration->algorithm = entry.name;
  CHECK_NOTHROW(check_calibration_family(sc));
}
