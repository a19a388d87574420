// The shipped layer tables (scenarios/models/) against the published architectures: parameter
// counts exactly, forward FLOPs per sample against published figures and closed forms written here
// from the architectures' hyperparameters, never from the tables.
//
// The tables' convention (generate_tables.py): forward FLOPs per sample, one multiply-add = 2
// FLOPs, matrix products only (convolutions, linear layers, attention scores); biases,
// normalisation, activations and softmax are left out. The loader makes each layer's backward
// pass twice its forward pass (input and weight gradients) unless a table says otherwise.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "sim/scenario/scenario_loader.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

ModelSpec shipped(const std::string& name) {
  const std::string yaml = cluster_scenario(
      4, 1,
      fmt::format("model: {{layers: {}/scenarios/models/{}.yaml}}\nalgorithm: {{name: ring_allreduce}}",
                  AGGSIM_SOURCE_DIR, name));
  return load_scenario_text(yaml, "t.yaml").model;
}

double forward_flops(const ModelSpec& m) {
  double total = 0;
  for (const LayerSpec& l : m.layers) total += l.forward_flops;
  return total;
}

// Kaplan et al. 2020, Table 1, forward FLOPs per token of a transformer with n_layer blocks of
// width d_model (d_attn = d_model, d_ff given), over a context of n_ctx tokens:
//   C_forward = 2N + 2 n_layer n_ctx d_attn,   N = 2 d_model n_layer (2 d_attn + d_ff)
// (N leaves out embeddings; the 2 n_layer n_ctx d_attn "mask" term is the QK^T product).
double kaplan_forward_per_token(double n_layer, double d_model, double d_ff, double n_ctx) {
  const double n = 2 * d_model * n_layer * (2 * d_model + d_ff);
  return 2 * n + 2 * n_layer * n_ctx * d_model;
}

// What the tables count beyond Kaplan's approximation, per token: the attention-weighted sum of
// values (AV, as many FLOPs as QK^T) over the full n_ctx x n_ctx score matrix (dense kernels
// compute it all, masked or not).
double values_product_per_token(double n_layer, double d_model, double n_ctx) {
  return 2 * n_layer * n_ctx * d_model;
}

// The closed forms and the tables leave out biases, layer norms, GELU and softmax (< 0.5 % of the
// work at these sizes); the conventions that matter (attention counted once: 1.4 % for BERT,
// 6.6 % for GPT-2; the LM head left out: 27 % for GPT-2) are far outside this tolerance.
constexpr double kTolerance = 0.005;

}  // namespace

TEST_CASE("shipped layer tables match the published parameter counts", "[workload][models]") {
  // ResNet-50: 25,557,032 (torchvision); BERT-base uncased: 109,482,240 with the pooler, no
  // task heads (Devlin et al. 2019 quote 110M); GPT-2 small: 124,439,808 (Radford et al. 2019, 124M).
  // The image networks ATOMO and PowerSGD train: torchvision's model cards (ResNet-18/34/101/152,
  // VGG-16), Vogels et al. 2019 (ResNet-18 and VGG-16 for CIFAR-10), Caffe's MNIST LeNet (ATOMO's).
  const std::map<std::string, std::uint64_t> published = {
      {"resnet50", 25'557'032},      {"bert_base", 109'482'240}, {"gpt2_small", 124'439'808},
      {"resnet18", 11'689'512},      {"resnet34", 21'797'672},   {"resnet101", 44'549'160},
      {"resnet152", 60'192'808},     {"vgg16", 138'357'544},     {"resnet18_cifar10", 11'173'962},
      {"vgg16_cifar10", 14'728'266}, {"lenet", 431'080}};
  for (const auto& [name, params] : published) {
    INFO(name);
    CHECK(shipped(name).size_bytes == 4 * params);
  }
}

TEST_CASE("ResNet-50's forward FLOPs match torchvision and He et al.", "[workload][models]") {
  const ModelSpec m = shipped("resnet50");
  const double macs = forward_flops(m) / 2;
  // torchvision's ResNet50_Weights model card: 4.09 "GFLOPS", counted as multiply-adds (fvcore), for
  // the v1.5 network the table models (stride 2 on the 3x3 convolution), one 224x224 image.
  CHECK(macs == Approx(4.09e9).epsilon(kTolerance));
  // He et al. 2016, Table 1: 3.8e9 multiply-adds for v1, whose stride 2 sits on the first 1x1
  // convolution of stages 2-4. v1.5 runs that convolution (cin -> mid channels) at the stage's
  // input resolution hw instead of hw/2: (1 - 1/4) cin mid hw^2 more multiply-adds per stage.
  struct Stage {
    double cin, mid, hw;
  };
  double v15_extra = 0;
  for (const Stage& s : {Stage{256, 128, 56}, Stage{512, 256, 28}, Stage{1024, 512, 14}})
    v15_extra += 0.75 * s.cin * s.mid * s.hw * s.hw;
  // The paper gives two significant digits (3.75e9 to 3.85e9), hence 2 %.
  CHECK(macs - v15_extra == Approx(3.8e9).epsilon(0.02));
}

TEST_CASE("BERT-base's forward FLOPs match the transformer closed form", "[workload][models]") {
  // Devlin et al. 2019: L = 12, H = 768, feed-forward 4H; the table's sequence is 128 tokens.
  // BertModel has no LM head; its pooler is one H x H product on the first token.
  const double n_layer = 12, d = 768, d_ff = 3072, seq = 128;
  const double expected =
      seq * (kaplan_forward_per_token(n_layer, d, d_ff, seq) + values_product_per_token(n_layer, d, seq)) +
      2 * d * d;
  CHECK(forward_flops(shipped("bert_base")) == Approx(expected).epsilon(kTolerance));
}

TEST_CASE("GPT-2 small's forward FLOPs match the transformer closed form", "[workload][models]") {
  // Radford et al. 2019 / Hugging Face gpt2: 12 layers, d_model 768, feed-forward 3072,
  // vocabulary 50,257, context 1,024 (the table's sequence). The LM head (tied to the token
  // embedding) is Kaplan's "de-embed" row, 2 d_model n_vocab per token, which his approximation
  // drops but a forward pass computes.
  const double n_layer = 12, d = 768, d_ff = 3072, vocab = 50257, seq = 1024;
  const double expected = seq * (kaplan_forward_per_token(n_layer, d, d_ff, seq) +
                                 values_product_per_token(n_layer, d, seq) + 2 * d * vocab);
  CHECK(forward_flops(shipped("gpt2_small")) == Approx(expected).epsilon(kTolerance));
}

TEST_CASE("the shipped tables' backward passes cost twice their forward passes", "[workload][models]") {
  // Input and weight gradients are each one product of the forward's size: training costs 3x the
  // forward pass (Kaplan et al.'s 6N per token).
  for (const char* name :
       {"resnet50", "bert_base", "gpt2_small", "resnet18", "resnet18_cifar10", "vgg16", "lenet"}) {
    INFO(name);
    double backward = 0;
    const ModelSpec m = shipped(name);
    for (const LayerSpec& l : m.layers) backward += l.backward_flops;
    CHECK(backward == Approx(2 * forward_flops(m)).epsilon(1e-12));
  }
}

TEST_CASE("ImageNet ResNets' and VGG-16's forward FLOPs match torchvision's model cards",
          "[workload][models]") {
  // torchvision's *_Weights model cards: "GFLOPS" counted as multiply-adds, one 224x224 image.
  const std::map<std::string, double> gmacs = {
      {"resnet18", 1.81}, {"resnet34", 3.66}, {"resnet101", 7.80}, {"resnet152", 11.51}, {"vgg16", 15.47}};
  for (const auto& [name, g] : gmacs) {
    INFO(name);
    CHECK(forward_flops(shipped(name)) / 2 == Approx(g * 1e9).epsilon(kTolerance));
  }
}

TEST_CASE("CIFAR-10 and MNIST networks' forward FLOPs match closed forms", "[workload][models]") {
  // A k x k convolution from cin to cout channels producing an hw x hw map: cout cin k^2 hw^2 MACs.
  auto conv = [](double cin, double cout, double k, double hw) { return cout * cin * k * k * hw * hw; };
  // ResNet-18 for CIFAR-10: 3x3 stem at 32x32, then four stages of two basic blocks (two 3x3
  // convolutions each) of width 64 * 2^s at 32 / 2^s; stages 2-4 open with a 1x1 projection.
  double resnet = conv(3, 64, 3, 32) + 10.0 * 512;
  for (int s = 0; s < 4; ++s) {
    const double c = 64 << s, hw = 32 >> s, cin = s == 0 ? 64 : c / 2;
    resnet += conv(cin, c, 3, hw) + 3 * conv(c, c, 3, hw) + (s > 0 ? conv(cin, c, 1, hw) : 0);
  }
  CHECK(forward_flops(shipped("resnet18_cifar10")) / 2 == Approx(resnet).epsilon(1e-12));
  // VGG-16 (configuration D) on 32x32: 2, 2, 3, 3, 3 convolutions of width 64..512 at 32..2.
  double vgg = 10.0 * 512, cin = 3;
  const int convs[] = {2, 2, 3, 3, 3};
  for (int b = 0; b < 5; ++b) {
    const double c = std::min(64 << b, 512), hw = 32 >> b;
    for (int i = 0; i < convs[b]; ++i, cin = c) vgg += conv(cin, c, 3, hw);
  }
  CHECK(forward_flops(shipped("vgg16_cifar10")) / 2 == Approx(vgg).epsilon(1e-12));
  // LeNet on 28x28: 5x5 convolutions to 24x24 and (after a 2x2 pool) 8x8, then 800 -> 500 -> 10.
  const double lenet = conv(1, 20, 5, 24) + conv(20, 50, 5, 8) + 800.0 * 500 + 500.0 * 10;
  CHECK(forward_flops(shipped("lenet")) / 2 == Approx(lenet).epsilon(1e-12));
}
