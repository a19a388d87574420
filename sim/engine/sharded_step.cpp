#include "sim/engine/sharded_step.hpp"

#include <fmt/format.h>

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(aggsim_engine);

namespace aggsim {

namespace {

// One rank's step under sharded data parallelism, run by the rank's one actor. Compute runs as an
// asynchronous execution on the rank's host while the actor issues the collectives that overlap it,
// in one stream in issue order (NCCL runs a communicator's kernels one after another): a unit's
// compute starts once the collectives issued before it (its own gather among them) are done.
class ShardedStep {
 public:
  ShardedStep(RankState& st, const RunShared& run, int step)
      : st_(st), run_(run), sharding_(*run.sharding), step_(step), rec_(run.log.at(st.ctx.rank, step)),
        scale_(static_cast<double>(run.scenario.model.batch) * run.compute.slowdown(st.ctx.rank, step)),
        units_(static_cast<int>(st.plan->step.buckets.size())) {}

  // Units in forward order are the plan's buckets from last to first (buckets follow the backward pass).
  void forward_pass() {
    const bool gathers = sharding_.before_forward;
    const ShardedCall kind = ShardedCall::forward_gather;
    if (gathers) gather(forward_unit(0), kind);
    for (int i = 0; i < units_; ++i) {
      const int next = i + 1 < units_ ? forward_unit(i + 1) : -1;
      overlapped(st_.plan->step.buckets[static_cast<std::size_t>(forward_unit(i))].forward_flops, [&] {
        if (gathers && sharding_.prefetch && next >= 0) gather(next, kind);
      });
      if (gathers && !sharding_.prefetch && next >= 0) gather(next, kind);
    }
  }

  // Each unit's backward, its gradients reduce-scattered during the next unit's backward; `full`
  // gathers each unit first (the next one prefetched, issued before the reduce-scatter, as FSDP's
  // BACKWARD_PRE does).
  void backward_pass() {
    const bool gathers = sharding_.before_backward;
    const ShardedCall kind = ShardedCall::backward_gather;
    if (gathers) gather(0, kind);
    for (int b = 0; b < units_; ++b) {
      overlapped(st_.plan->step.buckets[static_cast<std::size_t>(b)].backward_flops, [&] {
        if (b > 0) reduce(b - 1);
        if (gathers && sharding_.prefetch && b + 1 < units_) gather(b + 1, kind);
      });
      if (gathers && !sharding_.prefetch && b + 1 < units_) gather(b + 1, kind);
    }
    rec_.compute_end = compute_end_;
    reduce(units_ - 1);
  }

  // Every unit's parameters gathered once more, after the optimizer step (ZeRO-1), or after the last
  // step so that the final weights are whole (a full state dict).
  void gather_all() {
    for (int i = 0; i < units_; ++i) gather(forward_unit(i), ShardedCall::step_end_gather);
  }

  // The collectives.csv slot of each call made so far, in call order.
  const std::vector<int>& call_slots() const { return slots_; }

  void close() {
    if (!started_) rec_.agg_start = rec_.agg_end = sg4::Engine::get_clock();
    run_.log.aggregation_ended(step_, rec_.agg_end);
  }

 private:
  int forward_unit(int i) const { return units_ - 1 - i; }
  // The call's slot in collectives.csv (ShardedCall).
  int slot(ShardedCall kind, int b) const { return st_.plan->first_call + static_cast<int>(kind) * units_ + b; }

  // Runs `flops` of compute on the host while `comms` runs in this actor; returns when both are done.
  template <class Comms>
  void overlapped(double per_sample_flops, const Comms& comms) {
    const double flops = per_sample_flops * scale_;
    sg4::ExecPtr exec;
    if (flops > 0) {
      st_.comm.note_work(flops);
      // A replayed step takes its timing, compute included, from the step it repeats.
      if (!st_.comm.replaying()) exec = sg4::this_actor::exec_async(flops);
    }
    overlapping_ = exec != nullptr;
    comms();
    overlapping_ = false;
    compute_end_ = sg4::Engine::get_clock();
    if (exec) {
      exec->wait();
      compute_end_ = exec->get_finish_time();
      if (st_.comm.tracer())
        st_.comm.tracer()->work({st_.ctx.rank, "compute", exec->get_start_time(), compute_end_});
    }
    for (const Span& c : during_compute_) account(c, std::max(0.0, std::min(c.to, compute_end_) - c.from));
    during_compute_.clear();
  }

  // A gather of unit b's parameters: the rank's weights (its own shard up to date) when it trains.
  void gather(int b, ShardedCall kind) {
    const Bucket& plan = st_.plan->step.buckets[static_cast<std::size_t>(b)];
    Gradient params;
    params.wire_elements = plan.wire_elements;
    params.wire_shape = plan.wire_shape;
    if (st_.trainer) params.values = st_.trainer->weights().segment(plan.proxy.begin, plan.proxy.count);
    call(
        [&] {
          RankContext ctx = algorithm_context(st_);  // inside the call: it carries the call's choice
          st_.aggregators[static_cast<std::size_t>(b)]->gather_parameters(ctx, params);
        },
        slot(kind, b));
    if (st_.trainer) st_.trainer->weights().segment(plan.proxy.begin, plan.proxy.count) = params.values;
  }

  // Unit b's reduce-scatter (and what the sharding adds to it): a collectives.csv call of the unit.
  void reduce(int b) {
    call(
        [&] {
          // Made inside the call: it carries the call's choice.
          RankContext bucket_ctx = algorithm_context(st_).for_bucket(static_cast<std::uint64_t>(b));
          st_.aggregators[static_cast<std::size_t>(b)]->aggregate(bucket_ctx, st_.buckets[static_cast<std::size_t>(b)]);
        },
        slot(ShardedCall::reduce, b));
  }

  // One collective: its time in the step's record; its part hidden behind the compute running beside
  // it is counted once that compute ends.
  template <class Body>
  void call(const Body& body, int logged_slot) {
    const double start = sg4::Engine::get_clock();
    if (!started_) {
      rec_.agg_start = start;
      started_ = true;
    }
    CollectiveChoice choice;
    st_.ctx.choice = &choice;
    st_.comm.begin_call();
    body();
    st_.ctx.choice = nullptr;
    const TransferWindow window = st_.comm.take_call_window();
    run_.calls.report(step_, logged_slot, window, choice);
    slots_.push_back(logged_slot);
    const double end = sg4::Engine::get_clock();
    // Gathers inside the passes (a gather at the step's end is after the compute, in the exposed
    // aggregation already).
    const Span span{start, end, logged_slot >= slot(ShardedCall::reduce, units_) && logged_slot < slot(ShardedCall::step_end_gather, 0)};
    if (overlapping_)
      during_compute_.push_back(span);
    else
      account(span, 0.0);
    rec_.agg_end = end;
  }

  RankState& st_;
  const RunShared& run_;
  const ParameterSharding& sharding_;
  int step_;
  RankStepRecord& rec_;
  double scale_;
  int units_;
  // A call's time and part hidden behind compute in the step's record.
  struct Span {
    double from, to;
    bool gather;
  };
  void account(const Span& c, double hidden) {
    rec_.hidden_comm += hidden;
    if (c.gather) rec_.exposed_gather += c.to - c.from - hidden;
  }
  bool overlapping_ = false;          // a compute runs beside the calls now
  std::vector<Span> during_compute_;  // those calls' spans
  double compute_end_ = 0;
  bool started_ = false;
  std::vector<int> slots_;
};

// Whole weights are available (after the forward pass's gathers, or a gather of every unit): the
// step `step`'s result is what the evaluator and the hooks see.
void report_weights(RankState& st, const RunShared& run, int step) {
  if (!st.trainer) return;
  if (run.hooks.after_step) run.hooks.after_step(st.ctx.rank, step, st.trainer->weights());
  if (run.evaluator && run.evaluator->due(step)) run.evaluator->contribute(step, st.ctx.rank, st.trainer->weights());
}

// Under a parallel layout the rank updates its shard of its slice only; the trainer's gradient needs
// the whole model. Its updated shards go to the replica sync after the update, and the rest of the
// model (the other slices, as their shards' owners hold them in fp32) is taken from there once every
// shard of the world is updated: after this rank's first gather of the next step (which needs
// every member of its shard group past its replica's meeting, where every rank of that replica had
// updated; hybrid's other groups hold the same shards, all-reduced), or after the step's meeting
// when the step gathers at its end (the replica's gathers needed their groups' updates).
void keep_updated_shards(RankState& st, const RunShared& run, int step) {
  if (!run.replicas || !st.trainer) return;
  const RankContext ctx = algorithm_context(st);
  for (std::size_t b = 0; b < st.plan->step.buckets.size(); ++b) {
    const Range unit = st.plan->step.buckets[b].proxy;
    const Range own = st.aggregators[b]->owned_shard(ctx, unit.count);
    run.replicas->keep_shard(step, {unit.begin + own.begin, own.count}, st.trainer->weights());
  }
}

void take_other_slices(RankState& st, const RunShared& run, int step) {
  if (run.replicas && st.trainer && step >= 0) run.replicas->take_others(step, st.plan->proxy, st.trainer->weights());
}

void sharded_step(RankState& st, const RunShared& run, int step) {
  const ParameterSharding& sharding = *run.sharding;
  RankStepRecord& rec = run.log.at(st.ctx.rank, step);
  rec.start = sg4::Engine::get_clock();
  const CommCounters c0 = st.comm.counters();
  const bool last = step + 1 == run.scenario.steps;
  // The last step's closing gather (a full state dict) makes it unlike the steps before: simulated.
  const bool like_others = sharding.after_step || !last;
  const int repeats = run.replay && like_others ? run.replay->begin(st.ctx.rank, step, st.comm) : -1;
  ShardedStep pass(st, run, step);
  st.computing = step;
  pass.forward_pass();
  if (!sharding.after_step) take_other_slices(st, run, step - 1);
  // The forward pass gathered every unit: the previous step's update is whole on every rank.
  if (sharding.before_forward && step > 0) report_weights(st, run, step - 1);
  Eigen::VectorXf values = local_values(st, run, step);
  const Eigen::Index size = values.size();
  const Eigen::VectorXf before = run.hooks.after_aggregate ? values : Eigen::VectorXf();
  cut_into_buckets(st, values);
  pass.backward_pass();
  st.computing = -1;
  join_buckets(st, size, values);
  // The rank's reduced shard of every unit, the rest zero.
  if (run.hooks.after_aggregate) run.hooks.after_aggregate(st.ctx.rank, step, before, values);
  if (st.trainer) st.trainer->step(values);  // the rank's own shard is updated; the rest is re-gathered
  keep_updated_shards(st, run, step);
  if (sharding.after_step || last) pass.gather_all();
  rec.bytes_sent = st.comm.counters().bytes_sent - c0.bytes_sent;
  rec.messages_sent = st.comm.counters().messages_sent - c0.messages_sent;
  if (repeats >= 0) run.replay->end_replayed(st.ctx.rank, step, repeats, st.comm, 0, &pass.call_slots());
  pass.close();
  if (run.replay) run.replay->finish(st.ctx.rank, step, repeats, st.comm);
  if (run.replicas) {  // the replica meets; the math of its slices goes through keep / take above
    Eigen::VectorXf timing_only;
    run.replicas->assemble(st.data_rank, step, st.plan->proxy, timing_only);
  }
  if (sharding.after_step || last) {
    take_other_slices(st, run, step);
    report_weights(st, run, step);
  }
  run.steps_done.rank_finished(step);
}

}  // namespace

void run_sharded_rank(RankState& st, const RunShared& run) {
  for (int step = 0; step < run.scenario.steps; ++step) {
    st.ctx.step = step;
    XBT_VERB("rank %d: sharded step %d begins", st.ctx.rank, step);
    sharded_step(st, run, step);
  }
  RankContext ctx = algorithm_context(st);
  for (auto& a : st.aggregators) a->finish(ctx);
}

}  // namespace aggsim
