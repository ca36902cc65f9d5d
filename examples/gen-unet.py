#!/usr/bin/env python3
"""Writes a U-Net-style CNN (Ronneberger et al. 2015) in the train dialect.

`--depth` encoder levels of two 3x3 convolutions with batch norm and ReLU,
each followed by a 2x2 max pool; a bottleneck of the same; then as many
decoder levels that upsample by 2 (nearest), concatenate the encoder's skip
tensor along channels and apply two more convolutions. A 1x1 convolution
gives per-pixel class logits, trained with cross-entropy over per-pixel
class indices (logits moved to NHWC and flattened to pixels x classes).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import trainir  # noqa: E402


def unet(a):
    m = trainir.Model("unet", a.dtype,
                      trainir.generated_by("gen-unet.py"))
    x = m.input("x", [a.batch, a.channels, a.image, a.image])
    y = m.label("y", [a.batch * a.image * a.image], "i32")

    def double_conv(name, h, cout):
        for i in range(2):
            w = m.param(f"{name}.c{i}.w", [cout, h.shape[1], 3, 3])
            h = m.conv2d(h, w, padding=1)
            h = m.batch_norm(h, m.param(f"{name}.c{i}.g", [cout]),
                             m.param(f"{name}.c{i}.b", [cout]))
            h = m.relu(h)
        return h

    skips, h, width = [], x, a.width
    for level in range(a.depth):
        h = double_conv(f"down{level}", h, width)
        skips.append(h)
        h = m.max_pool2d(h, 2, 2)
        width *= 2
    h = double_conv("bottom", h, width)
    for level in reversed(range(a.depth)):
        width //= 2
        h = m.upsample(h, 2)
        h = m.concat([skips[level], h], 1)
        h = double_conv(f"up{level}", h, width)
    logits = m.conv2d(h, m.param("head.w", [a.classes, width, 1, 1]))
    logits = m.add(logits, m.param("head.b", [a.classes, 1, 1]))
    logits = m.transpose(logits, [0, 2, 3, 1])
    logits = m.reshape(logits, [a.batch * a.image * a.image, a.classes])
    return m.text(m.cross_entropy(logits, y))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    if a.image % (1 << a.depth):
        p.error(f"--image must be a multiple of 2^depth = {1 << a.depth}")
    trainir.write(unet(a), a.output)


if __name__ == "__main__":
    main()
