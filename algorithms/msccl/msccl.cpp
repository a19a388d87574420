// `msccl`: the aggregation an MSCCL algorithm file describes (an all-reduce program, or an
// all-gather program after which each rank reduces the gathered vectors in rank order). The
// program is read, checked and its schedule run without time before anything is simulated
// (schedule.hpp): a program that would deadlock, or leave any rank with anything but the exact
// result, is refused with the first problem (a wrong one may run with `wrong_result: run`, to see
// what it does to training; the verdict then goes to summary.json). `program` may list several files; each
// call runs the first whose [minBytes, maxBytes] holds its size, as the MSCCL runtime selects (the list must
// cover every size). How a program moves and reduces: msccl_executor.hpp; the format subset and the
// checks: algorithms/msccl/README.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "algorithms/msccl/msccl_executor.hpp"
#include "algorithms/msccl/schedule.hpp"
#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/units.hpp"

namespace aggsim {

namespace {

class MscclAggregator final : public Aggregator {
 public:
  MscclAggregator(std::shared_ptr<MscclExecutor> executor, ReduceOp op)
      : executor_(std::move(executor)), op_(op) {}
  void aggregate(RankContext& ctx, Gradient& grad) override { executor_->run(ctx, grad, op_); }

 private:
  std::shared_ptr<MscclExecutor> executor_;
  ReduceOp op_;
};

struct Verified {
  std::string text;  // the file's, to notice a change
  std::shared_ptr<const MscclProgram> program;
  MscclVerdict verdict;  // its wrong_result "" when the result is exact
};

// A program read and verified, kept for the rest of the process: the loader and the run both
// prepare the algorithm, and a large program's checks need not run twice.
const Verified& load_program(const std::string& path) {
  static std::map<std::string, Verified> cache;
  std::string text = read_input_file(path, "MSCCL program");
  auto& entry = cache[path];
  if (!entry.program || entry.text != text) {
    auto program = std::make_shared<const MscclProgram>(read_msccl_program_text(text, path));
    MscclVerdict verdict = verify_msccl_program(*program);
    entry = {std::move(text), std::move(program), std::move(verdict)};
  }
  return entry;
}

// The scenario's programs, in order; a wrong result is refused unless `wrong_result: run`, and
// then collected in `verdicts` ("exact" or the message); `report` gathers what validate prints.
std::vector<std::shared_ptr<const MscclProgram>> load_programs(const Params& params,
                                                               std::vector<std::string>* verdicts = nullptr,
                                                               std::string* report = nullptr) {
  std::vector<std::shared_ptr<const MscclProgram>> programs;
  for (const std::string& path : params.files("program")) {
    const Verified& v = load_program(path);
    const std::string& wrong = v.verdict.wrong_result;
    if (!wrong.empty() && params.text("wrong_result") == "refuse") throw InputError(wrong);
    if (verdicts) verdicts->push_back(wrong.empty() ? "exact" : wrong);
    if (report) *report += describe_msccl_verdict(*v.program, v.verdict);
    programs.push_back(v.program);
  }
  const MscclProgram& first = *programs.front();
  for (const auto& p : programs) {
    if (p->collective != first.collective)
      throw InputError(
          fmt::format("{}: algo.coll: {}, but {} is an {} program: the programs of one scenario run "
                      "one collective",
                      p->where(p->line), msccl_collective_name(p->collective), first.file,
                      msccl_collective_name(first.collective)));
    if (p->gpus != first.gpus)
      throw InputError(fmt::format("{}: algo.ngpus: {}, but {} is for {} GPUs", p->where(p->line), p->gpus,
                                   first.file, first.gpus));
  }
  return programs;
}

// Every call size (bytes >= 1, the runtime's nBytes) needs a program whose range holds it.
void check_sizes_covered(const std::vector<std::shared_ptr<const MscclProgram>>& programs) {
  constexpr auto kNone = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& p : programs) ranges.emplace_back(p->min_bytes, p->max_bytes == 0 ? kNone : p->max_bytes);
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;  // every size in [1, covered] has a program
  for (const auto& [lo, hi] : ranges) {
    if (lo > covered + 1) break;
    covered = std::max(covered, hi);
  }
  if (covered == kNone) return;
  std::uint64_t next = kNone;
  for (const auto& [lo, hi] : ranges)
    if (lo > covered + 1) next = std::min(next, lo - 1);
  throw ParamError(
      "program",
      fmt::format("no program takes calls of {} to {} bytes (minBytes, maxBytes): every call needs "
                  "one (the MSCCL runtime would fall back to NCCL's own algorithm there)",
                  covered + 1, next == kNone ? std::string("any more") : std::to_string(next)));
}

// Each call is simulated iteration by iteration of the program's loop: the largest call the model
// makes must need at most kMscclMaxLoops of them.
void check_loops(const std::vector<std::shared_ptr<const MscclProgram>>& programs,
                 std::uint64_t model_bytes) {
  if (model_bytes == 0) return;
  for (const auto& p : programs) {
    const double total =
        static_cast<double>(model_bytes) * (p->collective == MscclCollective::allgather ? p->gpus : 1);
    const double largest = p->max_bytes == 0 ? total : std::min(total, static_cast<double>(p->max_bytes));
    if (largest < static_cast<double>(p->min_bytes)) continue;
    const double chunk = msccl_pipe(p->protocol).chunk_bytes;
    const double loops = std::ceil(largest / p->chunks_per_loop / chunk);
    if (loops > static_cast<double>(kMscclMaxLoops))
      throw ParamError(
          "model.size",
          fmt::format(
              "{}: a call of {} runs {:.0f} iterations of the loop of {} ({} chunks, each moved in "
              "pieces of {}), and aggsim simulates each message of each: at most {} iterations (calls "
              "up to {})",
              units::format_bytes(static_cast<double>(model_bytes)), units::format_bytes(largest), loops,
              p->file, p->chunks_per_loop, units::format_bytes(chunk), kMscclMaxLoops,
              units::format_bytes(static_cast<double>(kMscclMaxLoops) * p->chunks_per_loop * chunk)));
  }
}

}  // namespace

AlgorithmInfo msccl_entry() {
  AlgorithmInfo info;
  info.name = "msccl";
  // The shipped programs (rings, all-pairs, hierarchical) send about 2(p-1) chunks per rank: a
  // rough figure, the program's own count is only known once it is read.
  info.messages_per_rank_step = [](int p) { return 2.0 * (p - 1); };
  info.summary =
      "an MSCCL algorithm file (MSCCL-IR XML from msccl-tools): checked for deadlocks and an exact result, "
      "then run threadblock by threadblock with NCCL's protocol costs";
  info.params = {
      ParamSpec(
          "program", ParamKind::files, "",
          "the MSCCL XML file, or a list of them chosen per call by their minBytes/maxBytes (found like "
          "platform files; a bare name is a shipped program, e.g. ring_allreduce_8)")
          .needed()
          .shipped_as(DataKind::msccl_program),
      ParamSpec(
          "wrong_result", ParamKind::choice, "refuse",
          "a program that leaves any rank with a wrong result: refuse it, or run it anyway (the verdict "
          "goes to summary.json as msccl_verdict; the math shows what it does)")
          .one_of({"refuse", "run"}),
  };
  info.reduces_in_flight = true;
  info.consensus = true;
  info.fixed_ranks = [](const Params& params) { return load_programs(params).front()->gpus; };
  info.prepare = [](const AlgorithmConfig& cfg) {
    std::vector<std::string> verdicts;
    std::string report;
    const auto programs = load_programs(cfg.params, &verdicts, &report);
    const MscclProgram& first = *programs.front();
    if (first.gpus != cfg.world)
      throw InputError(
          fmt::format("{}: algo.ngpus: the program is for {} GPUs and the scenario has {} rank{}: ranks "
                      "must equal ngpus",
                      first.where(first.line), first.gpus, cfg.world, cfg.world == 1 ? "" : "s"));
    check_sizes_covered(programs);
    check_loops(programs, cfg.model_bytes);
    AlgorithmRun run;
    run.replay_refusal = "threadblocks interleave their transfers by timing";
    run.pieces_pay_latency = true;
    run.checks_report = [report] { return report; };
    // Per call every GPU runs each threadblock as an actor, and one sender actor per connection end.
    for (const auto& p : programs) {
      std::int64_t actors = 0;
      for (const MscclGpu& g : p->gpu)
        for (const MscclThreadblock& tb : g.threadblocks) actors += tb.send_peer >= 0 ? 2 : 1;
      run.extra_actors = std::max(run.extra_actors, actors);
    }
    run.extra_actors_what = "threadblocks (an actor each, and one more for each that sends)";
    if (!cfg.hosts()) {
      run.make_aggregator = []() -> std::unique_ptr<Aggregator> {
        throw std::logic_error("msccl: aggregators are made once the platform is built");
      };
      return run;
    }
    auto executor = std::make_shared<MscclExecutor>(programs, *cfg.hosts(), protocol_costs_of(cfg.calibration));
    const ReduceOp op = cfg.op;
    run.make_aggregator = [executor, op] { return std::make_unique<MscclAggregator>(executor, op); };
    run.summary_fields = [executor, verdicts] {
      auto fields = executor->summary();
      std::string verdict;
      for (const auto& v : verdicts) verdict += (verdict.empty() ? "" : "; ") + v;
      fields.insert(fields.begin() + 1, SummaryField{"msccl_verdict", 0, verdict});
      return fields;
    };
    return run;
  };
  return info;
}

}  // namespace aggsim
