#pragma once
// Proxy training problems: small models whose real gradients go through the real aggregation math
// while the modeled network (scenarios/models/) sets bytes and compute time. Parameters live in one
// flat vector made of named tensors (PyTorch's parameters(), in forward order); weight matrices
// keep their shape so low-rank compressors see matrices.
//   least_squares  y = w.x (+ noise), loss 1/2 mean (w.x - y)^2
//   logistic       two classes, sigmoid(w.x + b), mean cross-entropy
//   softmax        k classes, softmax(W x + b), mean cross-entropy
//   mlp            softmax(W2 tanh(W1 x + b1) + b2); tanh keeps the loss smooth for
//                  finite-difference checks
#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/core/random.hpp"
#include "sim/workload/options.hpp"

namespace aggsim {

// Samples as columns: x is dim x n; labels are class indices, targets regression values.
struct Batch {
  Eigen::MatrixXf x;
  std::vector<int> labels;
  Eigen::VectorXf targets;
  Eigen::Index size() const { return x.cols(); }
};

struct TensorInfo {
  std::string name;
  Shape shape;
  std::int64_t offset = 0;  // into the flat parameter vector
};

class Problem {
 public:
  virtual ~Problem() = default;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  std::int64_t size() const { return size_; }
  virtual bool classification() const { return true; }
  // Mean loss over the batch; when `grad` is given, also its gradient w.r.t. w.
  virtual double loss(const Eigen::VectorXf& w, const Batch& batch, Eigen::VectorXf* grad) const = 0;
  // Fraction of samples classified correctly (classification problems only).
  virtual double accuracy(const Eigen::VectorXf& w, const Batch& batch) const = 0;
  // Starting point, the same on every rank (drawn from a shared stream).
  virtual Eigen::VectorXf initial_weights(Rng& rng) const;

 protected:
  void add_tensor(const std::string& name, std::int64_t rows, std::int64_t cols);
  // A view of tensor i of w as a matrix (column-major, as Eigen and the offsets lay it out).
  Eigen::Map<const Eigen::MatrixXf> view(const Eigen::VectorXf& w, std::size_t i) const;
  Eigen::Map<Eigen::MatrixXf> view(Eigen::VectorXf& w, std::size_t i) const;

 private:
  std::vector<TensorInfo> tensors_;
  std::int64_t size_ = 0;
};

std::unique_ptr<Problem> make_problem(const WorkloadOptions& options);
std::int64_t problem_parameter_count(const WorkloadOptions& options);

}  // namespace aggsim
