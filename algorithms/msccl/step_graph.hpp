#pragma once
// The order an MSCCL program guarantees between its steps, whatever the timing: a step comes after
// the step before it in its threadblock, after its dependency (depid/deps), and a receiving step
// after the sending step whose message it takes (the k-th send on a connection feeds its k-th
// receive, as program_checks.cpp checks). A step that happens before another is a path of these
// edges; two steps with no path between them may run in either order or at once.
#include <string>
#include <vector>

#include "algorithms/msccl/program.hpp"

namespace aggsim {

struct MscclStepRef {
  int gpu = 0;
  int tb = 0;         // the threadblock's id on its GPU
  int tb_global = 0;  // over all GPUs, in GPU then threadblock order
  int index = 0;      // position in its threadblock
  const MscclStep* step = nullptr;
};

class MscclStepGraph {
 public:
  explicit MscclStepGraph(const MscclProgram& p);

  const MscclProgram& program() const { return p_; }
  std::size_t size() const { return steps_.size(); }
  const MscclStepRef& at(int id) const { return steps_[static_cast<std::size_t>(id)]; }
  int threadblocks() const { return static_cast<int>(tb_first_.size()); }
  // The steps that must come before `id`: the previous step of its threadblock, its dependency,
  // the sending step that feeds it (each -1 when there is none).
  int previous(int id) const;
  int dependency(int id) const;
  int feeding_send(int id) const { return feeding_send_[static_cast<std::size_t>(id)]; }
  // How many steps name `id` as one of the three above.
  int successors(int id) const { return successors_[static_cast<std::size_t>(id)]; }
  // Every step, each after all the steps that must come before it (deterministic). Shorter than
  // size() when the edges form a cycle (a program that cannot finish).
  const std::vector<int>& order() const { return order_; }
  // "gpu 1 tb 0 step 7 (line 40)" for messages.
  std::string name(int id) const;

 private:
  const MscclProgram& p_;
  std::vector<MscclStepRef> steps_;
  std::vector<int> tb_first_;  // per global threadblock: its first step's id
  std::vector<int> gpu_first_tb_;
  std::vector<int> feeding_send_;
  std::vector<int> successors_;
  std::vector<int> order_;
};

}  // namespace aggsim
