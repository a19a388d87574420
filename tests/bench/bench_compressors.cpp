// Throughput of every compressor's encode and decode on 1M and 16M fp32 values, beside a memcpy of
// the same buffer (bytes/s counts the dense fp32 input). PowerSGD is also compared with the bare
// Eigen products it needs (M Q, M^T P, P Q^T). Built as `bench_compressors`; not run by ctest:
//   build/tests/bench_compressors --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "algorithms/compression/low_rank.hpp"
#include "algorithms/registry.hpp"

using namespace aggsim;

namespace {

const Eigen::VectorXf& input(std::int64_t n) {
  static std::map<std::int64_t, Eigen::VectorXf> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  Rng rng = make_rng(1, Stream::gradient);
  Eigen::VectorXf v(n);
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(standard_normal(rng));
  return cache.emplace(n, std::move(v)).first->second;
}

std::unique_ptr<Compressor> make(const std::string& name,
                                 const std::map<std::string, std::string>& overrides) {
  const CompressorInfo* info = find_compressor(name);
  Params params = default_params(info->params);
  for (const auto& spec : info->params)
    if (overrides.count(spec.key)) params.set(spec.key, parse_param(spec, overrides.at(spec.key)));
  return info->make(params);
}

void set_bytes(benchmark::State& state, std::int64_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);
}

void bm_memcpy(benchmark::State& state, std::int64_t n) {
  const Eigen::VectorXf& v = input(n);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto _ : state) {
    std::memcpy(out.data(), v.data(), static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

void bm_encode(benchmark::State& state, std::string name, std::map<std::string, std::string> params,
               std::int64_t n) {
  const Eigen::VectorXf& v = input(n);
  auto c = make(name, params);
  const TensorDesc t = TensorDesc::flat(n, static_cast<std::uint64_t>(n));
  Rng rng = make_rng(2, Stream::compression);
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    Payload p = c->compress(v, t, rng);
    bytes = p.wire_bytes;
    benchmark::DoNotOptimize(p);
  }
  set_bytes(state, n);
  state.counters["ratio"] = static_cast<double>(n * 4) / static_cast<double>(bytes);
}

void bm_decode(benchmark::State& state, std::string name, std::map<std::string, std::string> params,
               std::int64_t n) {
  const Eigen::VectorXf& v = input(n);
  auto c = make(name, params);
  const TensorDesc t = TensorDesc::flat(n, static_cast<std::uint64_t>(n));
  Rng rng = make_rng(2, Stream::compression);
  const Payload p = c->compress(v, t, rng);
  for (auto _ : state) {
    Eigen::VectorXf out = c->decompress(p, t);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, n);
}

// The matrix products of one PowerSGD encode + decode, nothing else.
void bm_powersgd_products(benchmark::State& state, std::int64_t n, std::int64_t r) {
  const Shape view = matrix_view(Shape{n, 1});
  const Eigen::MatrixXf m = to_matrix(input(n), view);
  Eigen::MatrixXf q = Eigen::MatrixXf::Ones(view.cols, r), p(view.rows, r), out(view.rows, view.cols);
  for (auto _ : state) {
    p.noalias() = m * q;
    q.noalias() = m.transpose() * p;
    out.noalias() = p * q.transpose();
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, n);
}

}  // namespace

int main(int argc, char** argv) {
  // Keep freed 64 MB buffers in the heap: glibc would otherwise map and page-fault them afresh on
  // every call (~40 ms per 16M-value buffer here), which measures the kernel, not the compressor.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> compressors = {
      {"none", {}},
      {"topk", {{"ratio", "0.01"}}},
      {"randomk", {{"ratio", "0.01"}}},
      {"threshold", {{"threshold", "2.576"}}},  // ~1% of standard normal values
      {"qsgd", {{"levels", "16"}}},
      {"terngrad", {}},
      {"sign", {}},
      {"fp16", {}},
      {"uint8", {}},
      {"powersgd", {{"rank", "2"}}},
      {"atomo", {{"budget", "3"}}}};
  for (std::int64_t n : {std::int64_t{1} << 20, std::int64_t{1} << 24}) {
    const std::string size = n == (1 << 20) ? "1M" : "16M";
    benchmark::RegisterBenchmark(("memcpy/" + size).c_str(), bm_memcpy, n)->Unit(benchmark::kMillisecond);
    for (const auto& [name, params] : compressors) {
      auto* encode =
          benchmark::RegisterBenchmark(("encode/" + name + "/" + size).c_str(), bm_encode, name, params, n);
      auto* decode =
          benchmark::RegisterBenchmark(("decode/" + name + "/" + size).c_str(), bm_decode, name, params, n);
      encode->Unit(benchmark::kMillisecond);
      decode->Unit(benchmark::kMillisecond);
      if (name == "atomo" && n > (1 << 20))
        encode->Iterations(1);  // one 4096 x 4096 SVD takes about a minute
    }
    benchmark::RegisterBenchmark(("eigen_products/powersgd/" + size).c_str(), bm_powersgd_products, n, 2)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
