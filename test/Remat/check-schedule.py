#!/usr/bin/env python3
"""Re-checks a remat-solve --json schedule against its graph, independently
of the C++ simulator: every read finds its operand resident, every node is
computed, and the peak and cost are what remat-solve reported.

usage: check-schedule.py GRAPH.json RESULT.json
Checkmate-format graphs only (ids are already a topological order).
"""
import json
import sys


def main():
    graph = json.load(open(sys.argv[1]))
    result = json.load(open(sys.argv[2]))
    size = {n["id"]: n["cost_ram"] for n in graph["nodes"]}
    cost = {n["id"]: n["cost_cpu"] for n in graph["nodes"]}
    deps = {n["id"]: [] for n in graph["nodes"]}
    for link in graph["links"]:
        deps[link["target"]].append(link["source"])
    resident, computed = set(), set()
    live = peak = total = 0
    for kind, node in result["schedule"]:
        if kind == "compute":
            assert node not in resident, f"{node} computed while resident"
            for d in deps[node]:
                assert d in resident, f"{node} reads {d}, not resident"
            resident.add(node)
            computed.add(node)
            live += size[node]
            peak = max(peak, live)
            total += cost[node]
        else:
            assert node in resident, f"{node} freed while not resident"
            resident.remove(node)
            live -= size[node]
    assert computed == set(size), "some node is never computed"
    assert peak == result["peak_bytes"], (peak, result["peak_bytes"])
    assert total == result["cost"], (total, result["cost"])
    feasible = peak <= result["budget_bytes"]
    assert feasible == result["feasible"]
    print(f"schedule re-checked: peak {peak}, cost {total}, "
          f"feasible {str(feasible).lower()}")


if __name__ == "__main__":
    main()
