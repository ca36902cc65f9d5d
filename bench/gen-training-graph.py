#!/usr/bin/python3
"""Writes a synthetic training graph in Checkmate's node-link JSON format.

A forward chain of `--forward` nodes with random skip connections (like
residual blocks) and random sizes and costs, a loss, and a backward pass that
mirrors it: each backward node reads the previous gradient, its forward twin
and, for skips, the skip's source. Deterministic for a given --seed.

usage: gen-training-graph.py --forward 5000 [--seed 0] -o graph.json
"""
import argparse
import json
import random


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--forward", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    rng = random.Random(a.seed)
    nodes, links = [], []
    n = a.forward
    skips = {}
    for i in range(n):
        nodes.append({"id": i, "name": f"f{i}", "backward": False,
                      "cost_cpu": rng.randint(10, 400),
                      "cost_ram": rng.choice([1, 2, 4, 8]) * 2**20})
        if i > 0:
            links.append({"source": i - 1, "target": i})
        if i > 4 and rng.random() < 0.2:
            src = i - rng.randint(2, 4)
            skips[i] = src
            links.append({"source": src, "target": i})
    loss = n
    nodes.append({"id": loss, "name": "loss", "backward": False,
                  "cost_cpu": 1, "cost_ram": 4})
    links.append({"source": n - 1, "target": loss})
    prev = loss
    for k, i in enumerate(reversed(range(n))):
        b = n + 1 + k
        nodes.append({"id": b, "name": f"b{i}", "backward": True,
                      "cost_cpu": 2 * nodes[i]["cost_cpu"],
                      "cost_ram": nodes[i]["cost_ram"]})
        links.append({"source": prev, "target": b})
        links.append({"source": i, "target": b})
        if i in skips:
            links.append({"source": skips[i], "target": b})
        prev = b
    with open(a.output, "w") as f:
        json.dump({"directed": True, "multigraph": False,
                   "graph": {"name": f"synthetic_training_{2 * n + 1}"},
                   "nodes": nodes, "links": links}, f)


if __name__ == "__main__":
    main()
