#!/usr/bin/env python3
"""Writes a GPT-style decoder-only transformer (GPT-2 layout) in the train dialect.

Token and learned position embeddings, then `--layers` pre-norm blocks:
layer norm, causal multi-head self-attention (separate Q, K, V projections,
scores scaled by 1/sqrt(head size), causal mask, softmax, dropout on the
attention weights, output projection, dropout), a residual add; layer norm,
an MLP of 4x width with GELU, dropout, a residual add. A final layer norm,
a linear head to the vocabulary and cross-entropy on next-token indices.

Dropout randomness comes from the `seed` input and one `offset` input per
dropout site, so every site draws its own mask and a recomputed dropout
draws the same one. The residual stream is kept as (batch*seq) x width.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import trainir  # noqa: E402


def gpt(a):
    m = trainir.Model("gpt", a.dtype,
                      trainir.generated_by("gen-gpt.py"))
    B, T, C, H, V = a.batch, a.seq, a.width, a.heads, a.vocab
    D = C // H
    ids = m.input("ids", [B, T], "i64")
    y = m.label("y", [B * T], "i32")
    seed = m.input("seed", [], "i64")
    sites = iter(range(1 << 30))

    def dropout(h):
        if a.dropout == 0:
            return h
        offset = m.input(f"offset{next(sites)}", [], "i64")
        return m.dropout(h, seed, offset, a.dropout)

    def heads(h):
        # [B*T, C] -> [B*H, T, D]
        h = m.transpose(m.reshape(h, [B, T, H, D]), [0, 2, 1, 3])
        return m.reshape(h, [B * H, T, D])

    tok = m.embedding(m.param("wte", [V, C]), ids)
    h = m.add(tok, m.param("wpe", [T, C]), "emb")
    h = dropout(m.reshape(h, [B * T, C]))
    for i in range(a.layers):
        p = f"h{i}."
        n = m.layer_norm(h, m.param(p + "ln1.g", [C]), m.param(p + "ln1.b", [C]))
        q, k, v = (heads(m.linear(n, m.param(p + f"{x}.w", [C, C]),
                                  m.param(p + f"{x}.b", [C])))
                   for x in "qkv")
        scores = m.scale(m.batch_matmul(q, k, transpose_rhs=True), 1 / math.sqrt(D))
        att = dropout(m.softmax(m.causal_mask(scores)))
        o = m.batch_matmul(att, v)
        o = m.reshape(m.transpose(m.reshape(o, [B, H, T, D]), [0, 2, 1, 3]), [B * T, C])
        o = m.linear(o, m.param(p + "proj.w", [C, C]), m.param(p + "proj.b", [C]))
        h = m.add(h, dropout(o), "res")
        n = m.layer_norm(h, m.param(p + "ln2.g", [C]), m.param(p + "ln2.b", [C]))
        f = m.gelu(m.linear(n, m.param(p + "fc.w", [C, 4 * C]),
                            m.param(p + "fc.b", [4 * C])))
        f = m.linear(f, m.param(p + "fc2.w", [4 * C, C]), m.param(p + "fc2.b", [C]))
        h = m.add(h, dropout(f), "res")
    h = m.layer_norm(h, m.param("lnf.g", [C]), m.param("lnf.b", [C]))
    logits = m.matmul(h, m.param("head.w", [C, V]))
    return m.text(m.cross_entropy(logits, y))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    if a.width % a.heads:
        p.error("--width must be a multiple of --heads")
    trainir.write(gpt(a), a.output)


if __name__ == "__main__":
    main()
