#!/usr/bin/python3
"""Writes a synthetic layered graph without a backward pass, shaped like
Moccasin's random layered graphs, in Checkmate's node-link JSON format.

A source, then layers of random width; each node reads one or two nodes of
the layer before and, now and then, one of the layer before that; every
node feeds something, and the last layer feeds a sink. Random sizes and
costs. Deterministic for a given --seed.

usage: gen-layered-graph.py --nodes 10000 [--width 30] [--seed 0] -o graph.json
"""
import argparse
import json
import random


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--width", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    rng = random.Random(a.seed)
    nodes, links = [], []

    def node():
        i = len(nodes)
        nodes.append({"id": i, "name": f"v{i}", "backward": False,
                      "cost_cpu": rng.randint(1, 100),
                      "cost_ram": rng.randint(100, 5000)})
        return i

    layers = [[node()]]
    while len(nodes) < a.nodes - 1:
        width = min(rng.randint(1, 2 * a.width), a.nodes - 1 - len(nodes))
        layer = [node() for _ in range(width)]
        for v in layer:
            for u in set(rng.sample(layers[-1], min(len(layers[-1]),
                                                     rng.randint(1, 2)))):
                links.append({"source": u, "target": v})
            if len(layers) > 1 and rng.random() < 0.2:
                links.append({"source": rng.choice(layers[-2]), "target": v})
        fed = {l["source"] for l in links}
        for u in layers[-1]:
            if u not in fed:
                links.append({"source": u, "target": rng.choice(layer)})
        layers.append(layer)
    sink = node()
    for u in layers[-1]:
        links.append({"source": u, "target": sink})
    with open(a.output, "w") as f:
        json.dump({"directed": True, "multigraph": False,
                   "graph": {"name": f"synthetic_layered_{len(nodes)}"},
                   "nodes": nodes, "links": links}, f)


if __name__ == "__main__":
    main()
