#!/usr/bin/env python3
"""Writes the layer tables in this folder from the networks' published architectures.

Each table lists, in forward order, one entry per weight-carrying module: the weight matrix shape
[rows, cols] (a convolution's kernel flattened to [out, in * k * k], a linear layer's [out, in]),
its parameter count (weights plus the biases / normalisation scales that belong with it, as
PyTorch's parameters() counts them) and its forward FLOPs per sample (one multiply-add = 2 FLOPs;
element-wise work such as activations and normalisation is left out). backward_flops defaults to
twice forward_flops (input and weight gradients). Before anything is written, the totals are
checked against the published parameter counts (exactly) and the forward FLOPs against published
figures or closed forms from the published hyperparameters (within 0.5 %): ResNet-50 against
torchvision's 4.09 GMACs; BERT-base and GPT-2 small against Kaplan et al. 2020 (Table 1:
2N + 2 n_layer n_ctx d_model per token) plus what the tables also count, the attention-weighted
sum of values (another 2 n_layer n_ctx d_model per token) and GPT-2's LM head (Kaplan's de-embed
row, 2 d_model n_vocab per token), and BERT's pooler (2 d_model^2 per sequence).

    python3 scenarios/models/generate_tables.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def entry(name, rows, cols, params=None, flops=0):
    return {"name": name, "rows": rows, "cols": cols, "params": params or rows * cols, "flops": flops}


def resnet50():
    """torchvision resnet50 (v1.5: stride on the 3x3 convolution), 224 x 224 input."""
    layers = []

    def conv(name, cin, cout, k, hw_out):  # convolution + its batch norm (2 * cout params)
        layers.append(entry(name, cout, cin * k * k, cout * cin * k * k + 2 * cout,
                            2 * cout * cin * k * k * hw_out * hw_out))

    conv("conv1", 3, 64, 7, 112)
    cin, hw = 64, 56  # after the 3x3 max pool
    for stage, (mid, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=1):
        out = 4 * mid
        for b in range(blocks):
            s = stride if b == 0 else 1
            hw_out = hw // s
            p = f"layer{stage}.{b}"
            conv(f"{p}.conv1", cin, mid, 1, hw)
            conv(f"{p}.conv2", mid, mid, 3, hw_out)
            conv(f"{p}.conv3", mid, out, 1, hw_out)
            if b == 0:
                conv(f"{p}.downsample", cin, out, 1, hw_out)
            cin, hw = out, hw_out
    layers.append(entry("fc", 1000, 2048, 1000 * 2048 + 1000, 2 * 1000 * 2048))
    return layers


def resnet(blocks, bottleneck, cifar=False, classes=1000):
    """torchvision's ResNet-18/34 (basic blocks) and -101/152 (bottlenecks, v1.5) at 224 x 224; with
    cifar=True the CIFAR-10 variant PowerSGD and ATOMO train (3x3 stem at stride 1, no max pool,
    32 x 32 input, a 512 -> 10 classifier)."""
    layers = []

    def conv(name, cin, cout, k, hw_out):  # convolution + its batch norm (2 * cout params)
        layers.append(entry(name, cout, cin * k * k, cout * cin * k * k + 2 * cout,
                            2 * cout * cin * k * k * hw_out * hw_out))

    if cifar:
        conv("conv1", 3, 64, 3, 32)
        cin, hw = 64, 32
    else:
        conv("conv1", 3, 64, 7, 112)
        cin, hw = 64, 56  # after the 3x3 max pool
    expansion = 4 if bottleneck else 1
    for stage, (mid, count, stride) in enumerate(zip((64, 128, 256, 512), blocks, (1, 2, 2, 2)), start=1):
        out = expansion * mid
        for b in range(count):
            s = stride if b == 0 else 1
            hw_out = hw // s
            p = f"layer{stage}.{b}"
            if bottleneck:
                conv(f"{p}.conv1", cin, mid, 1, hw)
                conv(f"{p}.conv2", mid, mid, 3, hw_out)
                conv(f"{p}.conv3", mid, out, 1, hw_out)
            else:
                conv(f"{p}.conv1", cin, mid, 3, hw_out)
                conv(f"{p}.conv2", mid, mid, 3, hw_out)
            if s != 1 or cin != out:
                conv(f"{p}.downsample", cin, out, 1, hw_out)
            cin, hw = out, hw_out
    layers.append(entry("fc", classes, cin, classes * cin + classes, 2 * classes * cin))
    return layers


VGG16_CONVS = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def vgg16(cifar=False):
    """torchvision's vgg16 (configuration D, no batch norm) at 224 x 224; with cifar=True the
    CIFAR-10 VGG-16 of PowerSGD's experiments (batch norm after each convolution, one 512 -> 10
    classifier, 32 x 32 input)."""
    layers, cin, hw, index = [], 3, 32 if cifar else 224, 0
    for c in VGG16_CONVS:
        if c == "M":
            hw //= 2
            continue
        params = c * cin * 9 + c + (2 * c if cifar else 0)  # weight, bias (+ batch norm)
        layers.append(entry(f"features.{index}", c, cin * 9, params, 2 * c * cin * 9 * hw * hw))
        cin, index = c, index + 1
    fcs = [(512, 10)] if cifar else [(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]
    for i, (inp, out) in enumerate(fcs):
        layers.append(entry(f"classifier.{i}", out, inp, out * inp + out, 2 * out * inp))
    return layers


def lenet():
    """ATOMO's LeNet for MNIST (src/model_ops/lenet.py): conv 1 -> 20 (5x5), max pool, conv 20 -> 50
    (5x5), max pool, linear 800 -> 500, linear 500 -> 10; 28 x 28 input."""
    return [entry("conv1", 20, 25, 20 * 25 + 20, 2 * 20 * 25 * 24 * 24),
            entry("conv2", 50, 500, 50 * 500 + 50, 2 * 50 * 500 * 8 * 8),
            entry("fc1", 500, 800, 500 * 800 + 500, 2 * 500 * 800),
            entry("fc2", 10, 500, 10 * 500 + 10, 2 * 10 * 500)]


def transformer_block(prefix, d, ff, seq, qkv_fused):
    """One encoder/decoder block; attention score FLOPs (QK^T and AV: 2 * 2 * seq^2 * d) are
    attributed to the attention output projection, the layer norms' parameters to the projections
    they follow."""
    lin = lambda out, inp: 2 * out * inp * seq
    attn_scores = 4 * seq * seq * d
    layers = []
    if qkv_fused:  # GPT-2: ln_1 then c_attn [3d, d]
        layers.append(entry(f"{prefix}.attn.c_attn", 3 * d, d, 3 * d * d + 3 * d + 2 * d, lin(3 * d, d)))
        layers.append(entry(f"{prefix}.attn.c_proj", d, d, d * d + d, lin(d, d) + attn_scores))
        layers.append(entry(f"{prefix}.mlp.c_fc", ff, d, ff * d + ff + 2 * d, lin(ff, d)))
        layers.append(entry(f"{prefix}.mlp.c_proj", d, ff, d * ff + d, lin(d, ff)))
    else:  # BERT: q, k, v, output (+ LayerNorm), intermediate, output (+ LayerNorm)
        for w in ("query", "key", "value"):
            layers.append(entry(f"{prefix}.attention.self.{w}", d, d, d * d + d, lin(d, d)))
        layers.append(entry(f"{prefix}.attention.output", d, d, d * d + d + 2 * d, lin(d, d) + attn_scores))
        layers.append(entry(f"{prefix}.intermediate", ff, d, ff * d + ff, lin(ff, d)))
        layers.append(entry(f"{prefix}.output", d, ff, d * ff + d + 2 * d, lin(d, ff)))
    return layers


def bert_base(seq=128):
    """Hugging Face bert-base-uncased BertModel (with pooler, no task head), sequence length 128."""
    d, ff, vocab = 768, 3072, 30522
    layers = [entry("embeddings.word", vocab, d),
              entry("embeddings.position", 512, d),
              entry("embeddings.token_type", 2, d, 2 * d + 2 * d)]  # + embedding LayerNorm
    for i in range(12):
        layers += transformer_block(f"encoder.layer.{i}", d, ff, seq, qkv_fused=False)
    layers.append(entry("pooler", d, d, d * d + d, 2 * d * d))  # first token only
    return layers


def gpt2_small(seq=1024):
    """Hugging Face gpt2 (GPT-2 small), context 1024; the LM head shares wte's weights, so its
    FLOPs (2 * seq * d * vocab) are attributed to wte."""
    d, ff, vocab = 768, 3072, 50257
    layers = [entry("wte", vocab, d, vocab * d, 2 * seq * d * vocab), entry("wpe", 1024, d)]
    for i in range(12):
        layers += transformer_block(f"h.{i}", d, ff, seq, qkv_fused=True)
    layers.append(entry("ln_f", 2 * d, 1))
    return layers


def transformer_flops(n_layer, d, ff, seq, vocab=0):
    """Forward FLOPs per sequence: Kaplan et al. 2020's 2N + 2 n_layer n_ctx d per token, plus the
    attention-weighted sum of values (as many FLOPs again as QK^T) and an LM head of `vocab`."""
    n = 2 * d * n_layer * (2 * d + ff)
    return seq * (2 * n + 2 * n_layer * seq * d + 2 * n_layer * seq * d + 2 * d * vocab)


TABLES = {
    "resnet18": (lambda: resnet((2, 2, 2, 2), False), 11_689_512, 2 * 1.81e9, """\
ResNet-18 (He et al., CVPR 2016, Table 1: 1.8e9 multiply-adds per 224x224 image) as in
  torchvision's resnet18 (model card: 11,689,512 parameters, 1.81 GMACs). One 224x224 image per
  sample. Convolutions carry their batch norm's scale and shift."""),
    "resnet34": (lambda: resnet((3, 4, 6, 3), False), 21_797_672, 2 * 3.66e9, """\
ResNet-34 (He et al., CVPR 2016, Table 1: 3.6e9 multiply-adds) as in torchvision's resnet34
  (model card: 21,797,672 parameters, 3.66 GMACs). One 224x224 image per sample."""),
    "resnet101": (lambda: resnet((3, 4, 23, 3), True), 44_549_160, 2 * 7.80e9, """\
ResNet-101 (He et al., CVPR 2016) as in torchvision's resnet101 (v1.5; model card: 44,549,160
  parameters, 7.80 GMACs). One 224x224 image per sample."""),
    "resnet152": (lambda: resnet((3, 8, 36, 3), True), 60_192_808, 2 * 11.51e9, """\
ResNet-152 (He et al., CVPR 2016) as in torchvision's resnet152 (v1.5; model card: 60,192,808
  parameters, 11.51 GMACs). One 224x224 image per sample."""),
    "resnet18_cifar10": (lambda: resnet((2, 2, 2, 2), False, cifar=True, classes=10), 11_173_962,
                         2 * 0.5559e9, """\
ResNet-18 for CIFAR-10 as trained by PowerSGD (Vogels et al., NeurIPS 2019: 11,173,962
  parameters) and ATOMO: 3x3 stem at stride 1, no max pool, 512 -> 10 classifier. One 32x32 image
  per sample (0.556 GMACs)."""),
    "vgg16": (vgg16, 138_357_544, 2 * 15.47e9, """\
VGG-16 (Simonyan and Zisserman, ICLR 2015, configuration D: 138M parameters) as in torchvision's
  vgg16 (model card: 138,357,544 parameters, 15.47 GMACs). One 224x224 image per sample."""),
    "vgg16_cifar10": (lambda: vgg16(cifar=True), 14_728_266, 2 * 0.3132e9, """\
VGG-16 for CIFAR-10 as trained by PowerSGD (Vogels et al., NeurIPS 2019: 14,728,266
  parameters): configuration D's convolutions with batch norm, one 512 -> 10 classifier. One
  32x32 image per sample (0.313 GMACs)."""),
    "lenet": (lenet, 431_080, 2 * 2.293e6, """\
LeNet as in ATOMO's MNIST experiments (src/model_ops/lenet.py; Caffe's LeNet: 431,080
  parameters): two 5x5 convolutions (20 and 50 channels) and two linear layers (800 -> 500 -> 10).
  One 28x28 image per sample."""),
    "resnet50": (resnet50, 25_557_032, 2 * 4.09e9, """\
ResNet-50 (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, Table 1:
  3.8e9 multiply-adds per 224x224 image) as in torchvision's resnet50 (v1.5, stride on the 3x3
  convolution; model card: 25,557,032 parameters, 4.09 GMACs). One 224x224 image per sample.
  Convolutions carry their batch norm's scale and shift."""),
    "bert_base": (bert_base, 109_482_240, transformer_flops(12, 768, 3072, 128) + 2 * 768 * 768, """\
BERT-base (Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers", NAACL 2019:
  L=12, H=768, A=12, 110M parameters) as Hugging Face bert-base-uncased's BertModel (vocabulary
  30,522, 512 positions, pooler included, no task head: 109,482,240 parameters). One sequence of
  128 tokens per sample (the paper's pre-training phase 1 length)."""),
    "gpt2_small": (gpt2_small, 124_439_808, transformer_flops(12, 768, 3072, 1024, 50257), """\
GPT-2 small (Radford et al., "Language Models are Unsupervised Multitask Learners", 2019: 12
  layers, d_model 768; 124,439,808 parameters in Hugging Face's gpt2 model card / config:
  vocabulary 50,257, context 1,024). One sequence of 1,024 tokens per sample; forward FLOPs follow
  Kaplan et al. 2020 (2N per token plus attention) with the tied LM head counted once."""),
}


def write(name, layers, expected, expected_flops, source):
    total = sum(l["params"] for l in layers)
    assert total == expected, f"{name}: {total} parameters, expected {expected}"
    flops = sum(l["flops"] for l in layers)
    assert abs(flops / expected_flops - 1) < 0.005, f"{name}: {flops:.4g} forward FLOPs, expected {expected_flops:.4g}"
    lines = [f"# Generated by generate_tables.py: {len(layers)} layers, {total:,} parameters,",
             f"# {flops:.4g} forward FLOPs per sample (1 multiply-add = 2 FLOPs).",
             f"name: {name}",
             "source: |",
             "  " + source,
             "layers:"]
    for l in layers:
        extra = f", params: {l['params']}" if l["params"] != l["rows"] * l["cols"] else ""
        lines.append(f"  - {{name: {l['name']}, shape: [{l['rows']}, {l['cols']}]{extra}, "
                     f"forward_flops: {l['flops']}}}")
    with open(os.path.join(HERE, f"{name}.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name}: {len(layers)} layers, {total:,} parameters, {flops:.4g} forward FLOPs per sample")


if __name__ == "__main__":
    for name, (build, expected, expected_flops, source) in TABLES.items():
        write(name, build(), expected, expected_flops, source)
