"""Small PyTorch models for the exporter's tests and the side-by-side bench.

Each function returns a fresh nn.Module; sizes are arguments so that tests
use CI-sized shapes and benches realistic ones.
"""
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remat_ops  # noqa: E402


def mlp(layers=4, width=32, classes=10):
    mods = []
    for i in range(layers):
        mods.append(nn.Linear(width, width if i + 1 < layers else classes))
        if i + 1 < layers:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


def small_resnet(width=8, classes=10):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(2 * width, classes))


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention; with `sdpa`, PyTorch 2's
    F.scaled_dot_product_attention in place of the explicit product,
    mask and softmax."""

    def __init__(self, width, heads, seq, sdpa=False):
        super().__init__()
        self.width, self.heads, self.seq, self.sdpa = width, heads, seq, sdpa
        self.q, self.k, self.v = (nn.Linear(width, width) for _ in range(3))
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        t, c, h = self.seq, self.width, self.heads
        d = c // h

        def split(y):  # [b, t, c] -> [b*h, t, d]
            return y.reshape(-1, t, h, d).transpose(1, 2).reshape(-1, t, d)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if self.sdpa:
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = torch.matmul(q, k.transpose(1, 2)) * (1.0 / math.sqrt(d))
            att = remat_ops.causal_mask(att).softmax(dim=-1)
            y = torch.matmul(att, v)
        y = y.reshape(-1, h, t, d).transpose(1, 2)
        return self.proj(y.reshape(-1, t, c))


class Block(nn.Module):
    def __init__(self, width, heads, seq, sdpa=False):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, seq, sdpa)
        self.fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """GPT-2 layout: token and position embeddings, pre-norm blocks, a final
    layer norm and a vocabulary head; returns [batch*seq, vocab] logits."""

    def __init__(self, layers=2, width=32, heads=2, seq=16, vocab=64, sdpa=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Parameter(torch.randn(seq, width) * 0.02)
        self.blocks = nn.Sequential(*(Block(width, heads, seq, sdpa)
                                      for _ in range(layers)))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.vocab = vocab

    def forward(self, ids):
        x = self.ln(self.blocks(self.wte(ids) + self.wpe))
        return self.head(x).reshape(-1, self.vocab)


def gpt(layers=2, width=32, heads=2, seq=16, vocab=64):
    return GPT(layers, width, heads, seq, vocab)


def gpt_sdpa(layers=2, width=32, heads=2, seq=16, vocab=64):
    if not hasattr(nn.functional, "scaled_dot_product_attention"):
        raise RuntimeError(f"PyTorch {torch.__version__} has no "
                           "F.scaled_dot_product_attention (2.0 and later)")
    return GPT(layers, width, heads, seq, vocab, sdpa=True)


class UNet(nn.Module):
    """Encoder levels of two conv-BN-ReLU and a max pool, a bottleneck,
    decoder levels that upsample, concatenate the skip and convolve; returns
    per-pixel logits as [batch*height*width, classes]."""

    def __init__(self, depth=2, width=4, channels=3, classes=4):
        super().__init__()

        def double(cin, cout):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU())

        self.down, cin, w = nn.ModuleList(), channels, width
        for _ in range(depth):
            self.down.append(double(cin, w))
            cin, w = w, 2 * w
        self.bottom = double(cin, w)
        self.up = nn.ModuleList()
        for _ in range(depth):
            self.up.append(double(w + w // 2, w // 2))
            w //= 2
        self.pool = nn.MaxPool2d(2, 2)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(w, classes, 1)
        self.classes = classes

    def forward(self, x):
        skips = []
        for level in self.down:
            x = level(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for level, skip in zip(self.up, reversed(skips)):
            x = level(torch.cat([skip, self.upsample(x)], 1))
        return self.head(x).permute(0, 2, 3, 1).reshape(-1, self.classes)


def unet(depth=2, width=4, channels=3, classes=4):
    return UNet(depth, width, channels, classes)


class EncoderClassifier(nn.Module):
    """PyTorch's own nn.TransformerEncoderLayer stack over a sequence of
    feature vectors, mean-pooled into class logits."""

    def __init__(self, layers=2, width=32, heads=4, classes=10):
        super().__init__()
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width,
                                       dropout=0.0, batch_first=True), layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def transformer_encoder(layers=2, width=32, heads=4, classes=10):
    return EncoderClassifier(layers, width, heads, classes)


class LSTMClassifier(nn.Module):
    """nn.LSTM over a sequence (unrolled at capture), the last step's hidden
    state into class logits."""

    def __init__(self, features=8, hidden=16, layers=2, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


def lstm(features=8, hidden=16, layers=2, classes=10):
    return LSTMClassifier(features, hidden, layers, classes)
