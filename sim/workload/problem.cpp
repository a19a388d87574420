#include "sim/workload/problem.hpp"

#include <cmath>

namespace aggsim {

void Problem::add_tensor(const std::string& name, std::int64_t rows, std::int64_t cols) {
  tensors_.push_back({name, {rows, cols}, size_});
  size_ += rows * cols;
}

Eigen::Map<const Eigen::MatrixXf> Problem::view(const Eigen::VectorXf& w, std::size_t i) const {
  const TensorInfo& t = tensors_[i];
  return Eigen::Map<const Eigen::MatrixXf>(w.data() + t.offset, t.shape.rows, t.shape.cols);
}

Eigen::Map<Eigen::MatrixXf> Problem::view(Eigen::VectorXf& w, std::size_t i) const {
  const TensorInfo& t = tensors_[i];
  return Eigen::Map<Eigen::MatrixXf>(w.data() + t.offset, t.shape.rows, t.shape.cols);
}

Eigen::VectorXf Problem::initial_weights(Rng&) const {
  return Eigen::VectorXf::Zero(size_);
}

namespace {

// Mean cross-entropy of softmax(z) against the labels (columns are samples). With `dz`, writes
// d loss / d z = (softmax(z) - onehot) / n.
double softmax_cross_entropy(const Eigen::MatrixXf& z, const std::vector<int>& labels, Eigen::MatrixXf* dz) {
  const Eigen::Index n = z.cols();
  double total = 0;
  if (dz) dz->resize(z.rows(), n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const float top = z.col(j).maxCoeff();
    const Eigen::VectorXf e = (z.col(j).array() - top).exp();
    const float sum = e.sum();
    const int y = labels[static_cast<std::size_t>(j)];
    total += std::log(static_cast<double>(sum)) - static_cast<double>(z(y, j) - top);
    if (dz) {
      dz->col(j) = e / (sum * static_cast<float>(n));
      (*dz)(y, j) -= 1.0f / static_cast<float>(n);
    }
  }
  return total / static_cast<double>(n);
}

double argmax_accuracy(const Eigen::MatrixXf& z, const std::vector<int>& labels) {
  Eigen::Index correct = 0;
  for (Eigen::Index j = 0; j < z.cols(); ++j) {
    Eigen::Index best;
    z.col(j).maxCoeff(&best);
    correct += best == labels[static_cast<std::size_t>(j)];
  }
  return static_cast<double>(correct) / static_cast<double>(z.cols());
}

class LeastSquares final : public Problem {
 public:
  explicit LeastSquares(int dim) { add_tensor("weight", dim, 1); }
  bool classification() const override { return false; }
  double loss(const Eigen::VectorXf& w, const Batch& b, Eigen::VectorXf* grad) const override {
    const Eigen::VectorXf r = b.x.transpose() * w - b.targets;
    if (grad) *grad = b.x * r / static_cast<float>(b.size());
    return 0.5 * static_cast<double>(r.squaredNorm()) / static_cast<double>(b.size());
  }
  double accuracy(const Eigen::VectorXf&, const Batch&) const override { return 0; }
};

class Logistic final : public Problem {
 public:
  explicit Logistic(int dim) {
    add_tensor("weight", dim, 1);
    add_tensor("bias", 1, 1);
  }
  double loss(const Eigen::VectorXf& w, const Batch& b, Eigen::VectorXf* grad) const override {
    const Eigen::Index n = b.size(), d = b.x.rows();
    const Eigen::VectorXf z = (b.x.transpose() * w.head(d)).array() + w[d];
    Eigen::VectorXf s(n);
    double total = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double zj = z[j], y = b.labels[static_cast<std::size_t>(j)];
      // log(1 + e^z) - y z, computed without overflow
      total += (zj > 0 ? zj + std::log1p(std::exp(-zj)) : std::log1p(std::exp(zj))) - y * zj;
      s[j] = static_cast<float>(1.0 / (1.0 + std::exp(-zj)) - y);
    }
    if (grad) {
      grad->resize(size());
      grad->head(d) = b.x * s / static_cast<float>(n);
      (*grad)[d] = s.sum() / static_cast<float>(n);
    }
    return total / static_cast<double>(n);
  }
  double accuracy(const Eigen::VectorXf& w, const Batch& b) const override {
    const Eigen::Index d = b.x.rows();
    const Eigen::VectorXf z = (b.x.transpose() * w.head(d)).array() + w[d];
    Eigen::Index correct = 0;
    for (Eigen::Index j = 0; j < z.size(); ++j)
      correct += (z[j] > 0) == (b.labels[static_cast<std::size_t>(j)] == 1);
    return static_cast<double>(correct) / static_cast<double>(z.size());
  }
};

class Softmax final : public Problem {
 public:
  Softmax(int dim, int classes) {
    add_tensor("weight", classes, dim);
    add_tensor("bias", classes, 1);
  }
  double loss(const Eigen::VectorXf& w, const Batch& b, Eigen::VectorXf* grad) const override {
    const Eigen::MatrixXf z = logits(w, b);
    if (!grad) return softmax_cross_entropy(z, b.labels, nullptr);
    Eigen::MatrixXf dz;
    const double l = softmax_cross_entropy(z, b.labels, &dz);
    grad->resize(size());
    view(*grad, 0).noalias() = dz * b.x.transpose();
    view(*grad, 1) = dz.rowwise().sum();
    return l;
  }
  double accuracy(const Eigen::VectorXf& w, const Batch& b) const override {
    return argmax_accuracy(logits(w, b), b.labels);
  }

 private:
  Eigen::MatrixXf logits(const Eigen::VectorXf& w, const Batch& b) const {
    return (view(w, 0) * b.x).colwise() + view(w, 1).col(0);
  }
};

class Mlp final : public Problem {
 public:
  Mlp(int dim, int hidden, int classes) {
    add_tensor("fc1.weight", hidden, dim);
    add_tensor("fc1.bias", hidden, 1);
    add_tensor("fc2.weight", classes, hidden);
    add_tensor("fc2.bias", classes, 1);
  }
  double loss(const Eigen::VectorXf& w, const Batch& b, Eigen::VectorXf* grad) const override {
    const Eigen::MatrixXf h = hidden(w, b);
    const Eigen::MatrixXf z = (view(w, 2) * h).colwise() + view(w, 3).col(0);
    if (!grad) return softmax_cross_entropy(z, b.labels, nullptr);
    Eigen::MatrixXf dz;
    const double l = softmax_cross_entropy(z, b.labels, &dz);
    grad->resize(size());
    // noalias: the products write into the gradient directly, not through a temporary
    view(*grad, 2).noalias() = dz * h.transpose();
    view(*grad, 3) = dz.rowwise().sum();
    const Eigen::MatrixXf da = ((view(w, 2).transpose() * dz).array() * (1.0f - h.array().square())).matrix();
    view(*grad, 0).noalias() = da * b.x.transpose();
    view(*grad, 1) = da.rowwise().sum();
    return l;
  }
  double accuracy(const Eigen::VectorXf& w, const Batch& b) const override {
    const Eigen::MatrixXf z = (view(w, 2) * hidden(w, b)).colwise() + view(w, 3).col(0);
    return argmax_accuracy(z, b.labels);
  }
  // Glorot-style scale 1/sqrt(fan_in) for the weight matrices, zero biases.
  Eigen::VectorXf initial_weights(Rng& rng) const override {
    Eigen::VectorXf w = Eigen::VectorXf::Zero(size());
    for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
      auto m = view(w, i);
      const float scale = 1.0f / std::sqrt(static_cast<float>(m.cols()));
      for (Eigen::Index k = 0; k < m.size(); ++k)
        m.data()[k] = scale * static_cast<float>(standard_normal(rng));
    }
    return w;
  }

 private:
  Eigen::MatrixXf hidden(const Eigen::VectorXf& w, const Batch& b) const {
    return ((view(w, 0) * b.x).colwise() + view(w, 1).col(0)).array().tanh().matrix();
  }
};

}  // namespace

std::unique_ptr<Problem> make_problem(const WorkloadOptions& o) {
  switch (o.problem) {
    case ProblemKind::least_squares:
      return std::make_unique<LeastSquares>(o.dim);
    case ProblemKind::logistic:
      return std::make_unique<Logistic>(o.dim);
    case ProblemKind::softmax:
      return std::make_unique<Softmax>(o.dim, o.classes);
    case ProblemKind::mlp:
      return std::make_unique<Mlp>(o.dim, o.hidden, o.classes);
  }
  return nullptr;
}

std::int64_t problem_parameter_count(const WorkloadOptions& o) {
  return make_problem(o)->size();
}

}  // namespace aggsim
