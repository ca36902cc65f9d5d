#!/usr/bin/python3
"""Trains a small CNN on scikit-learn's bundled 8x8 digits (no download)
with Remat from a plain Python loop: once without a memory limit and once at
50% of the step's peak without remat, with the same data order, and checks
that the two loss curves are identical to the bit and that test accuracy
reaches the target. Writes a PNG of both curves.

usage: examples/train_digits.py [--epochs 15] [--batch 64] [--out digits.png]

Needs PYTHONPATH=python (or `pip install -e python`), python3-sklearn and
python3-matplotlib. Exit status 0 when both checks hold.
"""

import argparse
import sys

import torch

import remat


def cnn(channels=16, layers=6):
    """Six 3x3 convolutions at 8 x 8 and a small head: deep enough that the
    activations, not one convolution's workspace, set the peak, so half of
    it is reachable."""
    torch.manual_seed(0)
    body = [torch.nn.Conv2d(1, channels, 3, padding=1), torch.nn.ReLU()]
    for _ in range(layers - 1):
        body += [torch.nn.Conv2d(channels, channels, 3, padding=1),
                 torch.nn.ReLU()]
    return torch.nn.Sequential(
        *body, torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(channels * 4 * 4, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10))


def digits():
    from sklearn.datasets import load_digits
    data = load_digits()
    x = torch.tensor(data.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[order], y[order]
    split = len(y) * 4 // 5
    return (x[:split], y[:split]), (x[split:], y[split:])


def train(train_set, epochs, batch, memory_limit):
    model = cnn()
    x, y = train_set
    step = remat.compile(model, (x[:batch], y[:batch]),
                         optimizer=remat.AdamW(lr=3e-3, weight_decay=1e-4),
                         memory_limit=memory_limit)
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(y),
                               generator=torch.Generator().manual_seed(epoch))
        for k in range(len(y) // batch):  # whole batches: the step's shape
            idx = order[k * batch:(k + 1) * batch]
            losses.append(step(x[idx].contiguous(), y[idx].contiguous()))
    step.copy_to(model)
    return model, losses, step.report()


def accuracy(model, test_set):
    x, y = test_set
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--target-accuracy", type=float, default=0.95)
    p.add_argument("--out", default="digits.png")
    a = p.parse_args()
    train_set, test_set = digits()
    print(f"digits: {len(train_set[1])} training and {len(test_set[1])} test "
          f"images, batch {a.batch}, {a.epochs} epochs, AdamW")
    runs = {}
    for label, limit in [("no limit", None), ("50% of the peak", "50%")]:
        model, losses, report = train(train_set, a.epochs, a.batch, limit)
        runs[label] = losses
        acc = accuracy(model, test_set)
        print(f"{label}: final loss {losses[-1]:.4f}, test accuracy "
              f"{acc:.4f}; peak {report['measured_peak_bytes']} bytes measured, "
              f"{report['predicted_peak_bytes']} predicted, compute "
              f"{report['predicted_overhead']:.3f}x")
        runs[label + " accuracy"] = acc
    same = runs["no limit"] == runs["50% of the peak"]
    print(f"loss curves bitwise identical: {'yes' if same else 'no'}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(runs["no limit"], label="no limit", linewidth=3, alpha=0.5)
    ax.plot(runs["50% of the peak"], label="50% of the peak", linestyle="--")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title("Small CNN on sklearn digits with Remat (AdamW)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"wrote {a.out}")
    ok = same and min(runs["no limit accuracy"],
                      runs["50% of the peak accuracy"]) >= a.target_accuracy
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
