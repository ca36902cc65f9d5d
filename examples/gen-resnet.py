#!/usr/bin/env python3
"""Writes a ResNet-style CNN (He et al. 2016, the CIFAR variant) in the train dialect.

A 3x3 stem convolution with batch norm and ReLU, a 2x2 max pool, then
`--stages` stages of `--blocks` basic residual blocks (two 3x3 convolutions
with batch norm; the first block of every stage after the first halves the
resolution and doubles the channels, its shortcut a strided 1x1 convolution
with batch norm), global average pooling, a linear classifier and
cross-entropy over class indices. With --depthwise the second convolution of
each block is a depthwise 3x3 followed by a pointwise 1x1 (MobileNet style).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import trainir  # noqa: E402


def resnet(a):
    m = trainir.Model("resnet", a.dtype,
                      trainir.generated_by("gen-resnet.py"))
    x = m.input("x", [a.batch, 3, a.image, a.image])
    y = m.label("y", [a.batch], "i32")

    def conv_bn(name, h, cout, k, stride, relu, groups=1):
        w = m.param(f"{name}.w", [cout, h.shape[1] // groups, k, k])
        h = m.conv2d(h, w, stride=stride, padding=k // 2, groups=groups)
        h = m.batch_norm(h, m.param(f"{name}.g", [cout]), m.param(f"{name}.b", [cout]))
        return m.relu(h) if relu else h

    h = conv_bn("stem", x, a.width, 3, 1, True)
    h = m.max_pool2d(h, 2, 2)
    width = a.width
    for s in range(a.stages):
        for b in range(a.blocks):
            name = f"s{s}b{b}"
            stride = 2 if s > 0 and b == 0 else 1
            cout = width * 2 if stride == 2 else width
            r = conv_bn(f"{name}.c1", h, cout, 3, stride, True)
            if a.depthwise:
                r = conv_bn(f"{name}.dw", r, cout, 3, 1, True, groups=cout)
                r = conv_bn(f"{name}.pw", r, cout, 1, 1, False)
            else:
                r = conv_bn(f"{name}.c2", r, cout, 3, 1, False)
            shortcut = h
            if stride != 1 or cout != h.shape[1]:
                shortcut = conv_bn(f"{name}.down", h, cout, 1, stride, False)
            h = m.relu(m.add(r, shortcut, "res"))
            width = cout
    pooled = m.mean(h, [2, 3])
    logits = m.linear(pooled, m.param("fc.w", [width, a.classes]),
                      m.param("fc.b", [a.classes]))
    return m.text(m.cross_entropy(logits, y))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--stages", type=int, default=3)
    p.add_argument("--blocks", type=int, default=3)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--depthwise", action="store_true")
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    trainir.write(resnet(a), a.output)


if __name__ == "__main__":
    main()
