#include "sim/engine/rank_actor.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/engine/sharded_step.hpp"
#include "sim/workload/synthetic_gradient.hpp"

// Step boundaries and each rank's aggregation, at verbose level: Release builds (NDEBUG) compile
// SimGrid's debug level out, and --log=aggsim_engine.thres:debug (or :verbose) shows verbose lines.
XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(aggsim_engine);

namespace aggsim {

namespace {

// DDP's schedule: a second actor aggregates the buckets while the backward pass goes on. mlbench's
// (overlap: false) aggregates its tensors one after another after the backward pass, in the rank's
// own actor.
bool pipelined(const RankState& st, const RunShared& run) {
  return !run.sharding && st.plan->step.overlap && st.plan->step.buckets.size() > 1;
}

// Whether bucket b of a pipelined step is handed over by a release of `ready` (compute_step) that
// the communication actor acquires (aggregate_step). A replayed step's backward pass takes no time
// and its buckets are all cut: the first release hands them all over, one SimGrid synchronisation
// instead of one per bucket.
bool has_own_release(const RankState& st, std::size_t b) {
  return b == 0 || !st.comm.replaying();
}

// Aggregates every bucket of this step in order, waiting for each to be released when pipelined
// (the first one's release taken by the caller, run_communication).
void aggregate_step(RankState& st, const RunShared& run, int step) {
  RankStepRecord& rec = run.log.at(st.ctx.rank, step);
  const CommCounters c0 = st.comm.counters();
  st.compression = {};
  // The plan's count: the compute actor fills st.buckets only on the steps that aggregate.
  for (std::size_t b = 0; b < st.plan->step.buckets.size(); ++b) {
    if (pipelined(st, run) && !st.aggregates_alone && b > 0 && has_own_release(st, b)) st.ready->acquire();
    if (b == 0) {
      rec.agg_start = sg4::Engine::get_clock();
      XBT_VERB("rank %d step %d: aggregation starts (%zu bucket(s))", st.ctx.rank, step,
               st.plan->step.buckets.size());
    }
    CollectiveChoice choice;  // the algorithm may say how it ran the call
    st.ctx.choice = &choice;
    st.comm.begin_call();
    RankContext bucket_ctx = algorithm_context(st).for_bucket(b);
    const double call_start = sg4::Engine::get_clock();
    st.aggregators[b]->aggregate(bucket_ctx, st.buckets[b]);
    const double call_end = sg4::Engine::get_clock();
    rec.hidden_comm +=
        hidden_part(call_start, call_end, rec.start, st.computing == step ? call_end : rec.compute_end,
                    run.log.window_start(step));
    st.ctx.choice = nullptr;
    run.calls.report(step, st.plan->first_call + static_cast<int>(b), st.comm.take_call_window(), choice);
  }
  rec.agg_end = sg4::Engine::get_clock();
  run.log.aggregation_ended(step, rec.agg_end);
  if (run.math) st.compression_of_step[step] = st.compression;
  XBT_VERB("rank %d step %d: aggregation ends", st.ctx.rank, step);
  rec.bytes_sent = st.comm.counters().bytes_sent - c0.bytes_sent;
  rec.messages_sent = st.comm.counters().messages_sent - c0.messages_sent;
}

// The forward pass, then the backward pass bucket by bucket, releasing each bucket when pipelined
// and the step aggregates.
void compute_step(RankState& st, const RunShared& run, int step, bool communicates) {
  const double scale =
      static_cast<double>(run.scenario.model.batch) * run.compute.slowdown(st.ctx.rank, step);
  st.ctx.compute(st.plan->step.forward_flops * scale);
  for (std::size_t b = 0; b < st.plan->step.buckets.size(); ++b) {
    st.ctx.compute(st.plan->step.buckets[b].backward_flops * scale);
    if (pipelined(st, run) && communicates && !st.aggregates_alone && has_own_release(st, b)) st.ready->release();
  }
}

// A step between aggregations (algorithm.every > 1): no message, no aggregator call; the rank keeps
// its own vector, so its aggregation window is empty and sends nothing.
void skip_aggregation(RankState& st, const RunShared& run, int step) {
  RankStepRecord& rec = run.log.at(st.ctx.rank, step);
  rec.agg_start = rec.agg_end = rec.compute_end;
  run.log.aggregation_ended(step, rec.agg_end);
  XBT_VERB("rank %d step %d: local step, no aggregation", st.ctx.rank, step);
}

void apply_step(RankState& st, const RunShared& run, int step, const Eigen::VectorXf& aggregated) {
  if (!st.trainer) return;
  if (run.scenario.algorithm.apply_to == ApplyTo::gradients)
    st.trainer->step(aggregated);
  else
    st.trainer->weights() = aggregated;
  if (run.hooks.after_step) run.hooks.after_step(st.ctx.rank, step, st.trainer->weights());
  if (run.evaluator && run.evaluator->due(step))
    run.evaluator->contribute(step, st.ctx.rank, st.trainer->weights());
}

// Asynchronous aggregators complete their outstanding messages once the last step is done.
void finish_aggregators(RankState& st) {
  RankContext ctx = algorithm_context(st);
  for (auto& a : st.aggregators) a->finish(ctx);
}

void run_compute(RankState& st, const RunShared& run) {
  for (int step = 0; step < run.scenario.steps; ++step) {
    st.ctx.step = step;
    RankStepRecord& rec = run.log.at(st.ctx.rank, step);
    rec.start = sg4::Engine::get_clock();
    // The simulated step this one repeats (replayed in-process), or -1.
    const int repeats = run.replay ? run.replay->begin(st.ctx.rank, step, st.comm) : -1;
    if (repeats >= 0 && pipelined(st, run) && !st.aggregates_alone) {
      st.aggregates_alone = true;
      st.ready->release();  // the communication actor, waiting for this step's first bucket, ends
    } else if (repeats < 0 && st.aggregates_alone) {
      throw std::logic_error("replay: a simulated step after a replayed one");
    }
    XBT_VERB("rank %d: step %d begins%s", st.ctx.rank, step, repeats >= 0 ? " (replayed)" : "");
    Eigen::VectorXf values = local_values(st, run, step);
    const bool communicates = run.log.communicates(step);
    const bool measured = run.math && values.size() > 0;
    // The math log takes the input now: no rank keeps a copy of it while it aggregates.
    if (measured) run.math->report_input(st.ctx.rank, step, values);
    const Eigen::VectorXf before = run.hooks.after_aggregate && communicates ? values : Eigen::VectorXf();
    const Eigen::Index size = values.size();
    if (communicates) cut_into_buckets(st, values);
    st.computing = step;
    compute_step(st, run, step, communicates);
    rec.compute_end = sg4::Engine::get_clock();
    st.computing = -1;
    if (!communicates)
      skip_aggregation(st, run, step);
    else if (pipelined(st, run) && !st.aggregates_alone)
      st.done->acquire();
    else
      aggregate_step(st, run, step);
    if (repeats >= 0) run.replay->end_replayed(st.ctx.rank, step, repeats, st.comm, st.plan->first_call);
    if (communicates) join_buckets(st, size, values);
    if (run.replicas) run.replicas->assemble(st.data_rank, step, st.plan->proxy, values);
    if (communicates && run.hooks.after_aggregate) run.hooks.after_aggregate(st.ctx.rank, step, before, values);
    if (measured) {
      // A local step reports too (rank_spread); it compressed nothing.
      run.math->report_result(st.ctx.rank, step, values, st.compression_of_step[step]);
      st.compression_of_step.erase(step);
    }
    apply_step(st, run, step, values);
    if (run.replay) run.replay->finish(st.ctx.rank, step, repeats, st.comm);
    XBT_VERB("rank %d: step %d ends", st.ctx.rank, step);
    run.steps_done.rank_finished(step);
  }
  if (!pipelined(st, run) || st.aggregates_alone) finish_aggregators(st);
}

void run_communication(RankState& st, const RunShared& run) {
  for (int step = 0; step < run.scenario.steps; ++step) {
    if (!run.log.communicates(step)) continue;  // the compute actor's local step
    st.ready->acquire();  // the first bucket, or the end (aggregates_alone)
    if (st.aggregates_alone) return;
    aggregate_step(st, run, step);
    st.done->release();
  }
  finish_aggregators(st);
}

}  // namespace

RankContext algorithm_context(const RankState& st) {
  RankContext ctx = st.ctx;
  ctx.rank = st.comm.rank();
  ctx.world = st.comm.size();
  if (st.group_layout) ctx.layout = st.group_layout;
  return ctx;
}

// The step's proxy vector: gradient, or weights after a local step (apply_to: weights).
Eigen::VectorXf local_values(RankState& st, const RunShared& run, int step) {
  const Scenario& sc = run.scenario;
  if (!st.trainer) {
    if (!sc.model.math) return Eigen::VectorXf();
    return synthetic_gradient(sc.seed, st.data_rank, step, sc.model.proxy_dim);
  }
  Eigen::VectorXf g = st.trainer->gradient(step);
  // A diverging training: no compressor or reduction is given inf or NaN (top-k looped for ever on
  // NaN); the run fails once it ends (an exception cannot leave a SimGrid actor).
  if (!g.allFinite()) {
    run.steps_done.note_divergence(st.ctx.rank, step);
    g.setZero();
  }
  if (sc.algorithm.apply_to == ApplyTo::gradients) return g;
  st.trainer->step(g);
  return st.trainer->weights();
}

// The buckets take copies of their segments of `values`, which gives up its storage while they are
// aggregated; join_buckets rebuilds it from the buckets, which tile it, and empties them. So a rank
// holds one copy of its gradient at a time, not two (at thousands of ranks, a vector a rank less).
// Under a parallel layout the buckets tile the rank's slice only, and `values` keeps the rest.
void cut_into_buckets(RankState& st, Eigen::VectorXf& values) {
  st.buckets.resize(st.plan->step.buckets.size());
  for (std::size_t b = 0; b < st.plan->step.buckets.size(); ++b) {
    const Bucket& plan = st.plan->step.buckets[b];
    Gradient& g = st.buckets[b];
    g.values = values.size() ? Eigen::VectorXf(values.segment(plan.proxy.begin, plan.proxy.count))
                             : Eigen::VectorXf();
    g.proxy_shape = values.size() ? plan.proxy_shape : Shape{0, 1};
    g.wire_elements = plan.wire_elements;
    g.wire_shape = plan.wire_shape;
    g.proxy_layout = values.size() ? plan.proxy_layout : WireLayout{};
  }
  if (st.plan->proxy.count == values.size()) values.resize(0);
}

void join_buckets(RankState& st, Eigen::Index size, Eigen::VectorXf& values) {
  if (size == 0) return;
  if (values.size() == 0) values.resize(size);
  Eigen::Index covered = 0;
  for (std::size_t b = 0; b < st.plan->step.buckets.size(); ++b) {
    const Range& r = st.plan->step.buckets[b].proxy;
    values.segment(r.begin, r.count) = st.buckets[b].values;
    st.buckets[b].values.resize(0);
    covered += r.count;
  }
  if (covered != st.plan->proxy.count)
    throw std::logic_error(fmt::format("the step plan's buckets cover {} of the {} values of its part", covered,
                                       st.plan->proxy.count));
}

void start_rank(RankState& st, const RunShared& run) {
  RankState* raw = &st;
  const RunShared* shared = &run;
  if (run.sharding) {
    sg4::Actor::create(fmt::format("rank-{}", st.ctx.rank), st.ctx.host,
                       [raw, shared] { run_sharded_rank(*raw, *shared); });
    return;
  }
  sg4::Actor::create(fmt::format("rank-{}", st.ctx.rank), st.ctx.host,
                     [raw, shared] { run_compute(*raw, *shared); });
  if (pipelined(st, run))
    sg4::Actor::create(fmt::format("rank-{}-comm", st.ctx.rank), st.ctx.host,
                       [raw, shared] { run_communication(*raw, *shared); });
}

}  // namespace aggsim
