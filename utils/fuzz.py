#!/usr/bin/python3
"""Feeds mutated inputs to remat-solve and remat-opt and reports any run that
crashes, hangs, fails without saying why, or answers over its budget.

remat-solve gets small training graphs (Checkmate's node-link format) and
layered graphs (Moccasin's), some mutated (a field deleted or given another
type or value, a node dropped or duplicated, an edge duplicated, reversed,
looped or pointed elsewhere, the file cut short), with budgets and time
limits both well-formed and not, and every solver. remat-opt gets the train
dialect's own test inputs with numbers, types, operands, roles and op names
swapped, through the dialect's passes and the lowering. Every error must be
a diagnostic (exit status 1 with a message); remat-solve's exit status 2
(no schedule meets the budget) must come with its answer; a feasible answer
must be within its budget.

--tool sizes grows shapes to the edges instead: MLPs (examples/gen-mlp.py)
with widths and batches of 1, small numbers, and values near 2^31, 2^32 and
the 2^53-byte tensor bound, through remat-compile (with random limits) and,
when small, remat-run (half of them with --memory-plan=malloc; the measured
peak of each must equal the prediction); and manifests with one size or
arena offset pushed past its bound, read by remat-run. Each must compile
and run or end in a diagnostic, and no remark, manifest or report may show
a negative (wrapped) size.

usage: utils/fuzz.py [--build build] [--runs 500] [--seed 0]
       [--tool solve|opt|both|sizes]

Not part of CI except a short --tool sizes run (test/Integration/CPU/
fuzz.test); a few minutes per thousand runs. Point --build at build-asan/
(utils/sanitize.sh) for remat-solve under the sanitizers. Inputs that
failed are copied to /tmp/remat-fuzz-*.
"""
import argparse
import copy
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WEIRD = [None, True, False, -1, 0, 1, 2**31, 2**53 + 1, 2**63, -2**63,
         1e308, -1e308, 1.5, -0.0, "x", "1", [], {}, [1], {"a": 1}]
BUDGETS = ["0.5x", "0.9x", "1x", "0x", "0.0001x", "2x", "1e9x", "-1x",
           "nanx", "infx", "x", "1", "0", "-5", "99999999999999999999",
           "1e3", "0.5", "abc", "1.5x", "0.5X", " 0.5x", "0.5x,0.7x",
           "0.7x,0.5x", "0.3x,0.3x", ""]
SOLVERS = ["auto", "greedy", "chen-greedy", "every-layer", "chen-sqrt",
           "none", "milp"]
TIME_LIMITS = ["2", "0", "-1", "nan", "1e400", "0.5"]
PIPELINES = [
    ["--train-autodiff"],
    ["--train-autodiff", "--train-remat=memory-limit=0.5x"],
    ["--train-remat=memory-limit=0.3x"],
    ["--train-autodiff", "--train-remat=memory-limit=1000",
     "--convert-train-to-linalg"],
    ["--train-print-memory"],
    ["--train-autodiff", "--remat-cpu-pipeline"],
    ["--convert-train-to-linalg"],
]


def training_graph(rng, n):
    """A forward chain with skips and its mirrored backward pass."""
    nodes, links = [], []
    for i in range(n):
        nodes.append({"id": i, "name": f"f{i}", "backward": False,
                      "cost_cpu": rng.randint(0, 50),
                      "cost_ram": rng.randint(0, 100)})
        if i > 0:
            links.append({"source": i - 1, "target": i})
        if i > 2 and rng.random() < 0.3:
            links.append({"source": i - rng.randint(2, 3), "target": i})
    for k, i in enumerate(reversed(range(n))):
        b = n + k
        nodes.append({"id": b, "name": f"b{i}", "backward": True,
                      "cost_cpu": rng.randint(0, 50),
                      "cost_ram": rng.randint(0, 100)})
        links.append({"source": b - 1 if k else n - 1, "target": b})
        links.append({"source": i, "target": b})
    return {"directed": True, "multigraph": False, "graph": {"name": "fuzz"},
            "nodes": nodes, "links": links}


def layered_graph(rng, n):
    nodes = [{"name": i, "out_cost": rng.randint(0, 100),
              "param_cost": rng.randint(0, 5),
              "duration": rng.randint(0, 20)} for i in range(n)]
    links = []
    for i in range(1, n):
        for j in rng.sample(range(i), min(i, rng.randint(1, 2))):
            links.append({"0": j, "1": i})
    return {"directed": True, "multigraph": False, "graph": {"name": "fuzz"},
            "nodes": nodes, "links": links}


def mutate_graph(rng, g):
    nodes, links = g.get("nodes"), g.get("links")
    if not isinstance(nodes, list):
        nodes = []
    kind = rng.randrange(11)
    if kind in (0, 1, 5, 6, 8) and not nodes:
        return
    if kind in (2, 3, 4, 9) and not (isinstance(links, list) and links):
        return
    if kind == 0:  # a node's field gets another value or type
        node = rng.choice(nodes)
        if isinstance(node, dict) and node:
            node[rng.choice(list(node))] = rng.choice(WEIRD)
    elif kind == 1:  # a node's field goes
        node = rng.choice(nodes)
        if isinstance(node, dict) and node:
            del node[rng.choice(list(node))]
    elif kind == 2:  # an edge points elsewhere
        link = rng.choice(links)
        if not isinstance(link, dict) or not link:
            return
        link[rng.choice(list(link))] = rng.choice(
            WEIRD + [rng.randint(-2, len(nodes) + 2)])
    elif kind == 3:  # an edge's end goes
        link = rng.choice(links)
        if isinstance(link, dict) and link:
            del link[rng.choice(list(link))]
    elif kind == 4:  # an edge twice, or reversed (a cycle, mostly)
        link = copy.deepcopy(rng.choice(links))
        ends = list(link) if isinstance(link, dict) else []
        if len(ends) == 2 and rng.random() < 0.5:
            link[ends[0]], link[ends[1]] = link[ends[1]], link[ends[0]]
        links.append(link)
    elif kind == 5:  # a node goes
        nodes.pop(rng.randrange(len(nodes)))
    elif kind == 6:  # a node twice (a duplicate id)
        nodes.append(copy.deepcopy(rng.choice(nodes)))
    elif kind == 7:  # a top-level field goes or changes type
        key = rng.choice(["nodes", "links", "graph", "directed"])
        if rng.random() < 0.5:
            g.pop(key, None)
        else:
            g[key] = rng.choice(WEIRD)
    elif kind == 8:  # an extra or odd field
        node = rng.choice(nodes)
        if isinstance(node, dict):
            node[rng.choice(["extra", "backward", "id",
                             "name"])] = rng.choice(WEIRD)
    elif kind == 9:  # a self-loop
        link = rng.choice(links)
        ends = list(link) if isinstance(link, dict) else []
        if len(ends) == 2:
            link[ends[1]] = link[ends[0]]
    else:  # no nodes, or one
        g["nodes"] = [] if rng.random() < 0.5 else nodes[:1]


def run_checked(args, path, timeout, statuses, report):
    """Runs `args` on the input at `path`; reports a hang, a crash (an exit
    status not in `statuses`, or a crash's message) or an error without a
    diagnostic. The finished process, or None after a hang."""
    try:
        p = subprocess.run(args, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        report("hang", args, path, "")
        return None
    if p.returncode not in statuses or any(
            s in p.stderr for s in ("Assertion", "Stack dump", "LLVM ERROR",
                                    "runtime error", "Sanitizer",
                                    "PLEASE submit")):
        report("crash", args, path, p.stderr)
    elif p.returncode == 1 and "error" not in p.stderr:
        report("error without a message", args, path, p.stderr)
    return p


def fuzz_solve(rng, binary, runs, work, report):
    for run in range(runs):
        n = rng.randint(1, rng.choice([8, 30]))
        g = (training_graph(rng, n) if rng.random() < 0.6 else
             layered_graph(rng, rng.randint(1, rng.choice([10, 40]))))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            mutate_graph(rng, g)
        text = json.dumps(g)
        if rng.random() < 0.05:
            text = text[:rng.randrange(len(text))]
        path = os.path.join(work, "graph.json")
        with open(path, "w") as f:
            f.write(text)
        budget = (rng.choice(BUDGETS) if rng.random() < 0.6 else
                  str(rng.randint(0, 800)))
        solver = rng.choice(SOLVERS)
        args = [binary, path, f"--budget={budget}", f"--solver={solver}",
                "--json"]
        if solver == "milp" or rng.random() < 0.2:
            args.append(f"--time-limit={rng.choice(TIME_LIMITS)}")
        # Exit status 2: no schedule meets the budget.
        p = run_checked(args, path, 60, (0, 1, 2), report)
        if p and p.returncode in (0, 2):
            try:
                out = json.loads(p.stdout)
            except ValueError:
                report("output that is not JSON", args, path, p.stdout)
                continue
            for answer in out if isinstance(out, list) else [out]:
                if answer["feasible"] and \
                        answer["peak_bytes"] > answer["budget_bytes"]:
                    report("answer over its budget", args, path, p.stdout)
            if p.returncode == 2 and all(a["feasible"] for a in (
                    out if isinstance(out, list) else [out])):
                report("exit status 2 with every answer feasible", args,
                       path, p.stdout)


def fuzz_opt(rng, binary, runs, work, report):
    chunks = []
    inputs = (glob.glob(os.path.join(ROOT, "test/Dialect/Train/*.mlir")) +
              glob.glob(os.path.join(ROOT,
                                     "test/Conversion/train-to-linalg*.mlir")))
    for name in sorted(inputs):
        with open(name) as f:
            for chunk in f.read().split("// -----"):
                body = "\n".join(line for line in chunk.splitlines()
                                 if not line.strip().startswith("//"))
                if "func.func" in body:
                    chunks.append(body)
    numbers = ["0", "1", "2", "3", "-1", "7", "1024", "2147483648",
               "99999999999"]
    types = ["f32", "f16", "bf16", "i32", "f64", "i1", "index"]

    def swap(text, pattern, choices):
        found = list(re.finditer(pattern, text))
        if not found:
            return text
        m = rng.choice(found)
        return text[:m.start()] + choices(found) + text[m.end():]

    for run in range(runs):
        text = rng.choice(chunks)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(6)
            if kind == 0:
                text = swap(text, r"\b\d+\b", lambda f: rng.choice(numbers))
            elif kind == 1:
                lines = text.splitlines()
                if len(lines) > 2:
                    lines.pop(rng.randrange(1, len(lines) - 1))
                text = "\n".join(lines)
            elif kind == 2:
                text = swap(text, r"\b(f32|f16|bf16)\b",
                            lambda f: rng.choice(types))
            elif kind == 3:
                text = swap(text, r"%[a-zA-Z0-9_]+",
                            lambda f: rng.choice(f).group())
            elif kind == 4:
                text = swap(text, r'"(param|input|label|loss)"',
                            lambda f: rng.choice(['"param"', '"input"',
                                                  '"label"', '"x"', '""']))
            else:
                text = swap(text, r"train\.\w+",
                            lambda f: rng.choice(f).group())
        path = os.path.join(work, "input.mlir")
        with open(path, "w") as f:
            f.write(text)
        args = [binary, path] + rng.choice(PIPELINES)
        run_checked(args, path, 120, (0, 1), report)


SIZE_EDGES = [1, 2, 3, 7, 64, 1000, 2**31 - 1, 2**31, 2**32 + 1, 2**26,
              2**27, 2**50 // 4, 2**51, 2**53 // 4 + 1]
SIZE_LIMITS = ["50%", "90%", "1", "1GiB", "8EiB", str(2**62)]
# A size or count printed negative: one that wrapped.
NEGATIVE = re.compile(r"(?<![\w.])-[0-9]+ (bytes|FLOPs)")


def fuzz_sizes(rng, build, runs, work, report):
    gen = {}
    with open(os.path.join(ROOT, "examples", "gen-mlp.py")) as f:
        exec(compile(f.read(), "gen-mlp.py", "exec"), gen)
    compiler = os.path.join(build, "bin", "remat-compile")
    runner = os.path.join(build, "bin", "remat-run")
    draw = lambda: (rng.choice(SIZE_EDGES) if rng.random() < 0.5
                    else rng.randint(1, 48))

    def checked(args, path, statuses=(0, 1)):
        p = run_checked(args, path, 120, statuses, report)
        if p is not None and NEGATIVE.search(p.stdout + p.stderr):
            report("negative size", args, path, p.stdout + p.stderr)
        return p

    for run in range(runs):
        width, batch = draw(), draw()
        path = os.path.join(work, f"m{run}.mlir")
        with open(path, "w") as f:
            f.write(gen["mlp"](rng.randint(1, 3), width, batch,
                               rng.choice(["f32", "f64", "f16"])))
        flags = ([f"--memory-limit={rng.choice(SIZE_LIMITS)}"]
                 if rng.random() < 0.6 else [])
        if rng.random() < 0.5:
            flags.append("--memory-plan=malloc")
        if width * batch >= 2**16 or width * width >= 2**16:
            checked([compiler, path, "--emit=step", "-o", os.devnull] + flags,
                    path)
            continue
        lib = os.path.join(work, f"m{run}.so")
        p = checked([compiler, path, "-o", lib] + flags, path)
        if p is None or p.returncode != 0:
            continue
        manifest = lib[:-3] + ".json"
        p = checked([runner, manifest, "--steps=1", "--json"], manifest, (0,))
        with open(manifest) as f:
            good = json.load(f)
        if p is not None and p.returncode == 0:
            out = json.loads(p.stdout)
            if out["measured_peak_bytes"] != out["predicted_peak_bytes"]:
                report("measured peak differs from the prediction",
                       [runner, manifest], manifest, p.stdout)
        if good.get("arena_offsets"):
            edits_arena = [("arena_offsets", None, [good["arena_bytes"], 1]),
                           ("arena_offsets", None, [-1, 8])]
        else:
            edits_arena = []
        edits = [("arguments", rng.randrange(len(good["arguments"])), v)
                 for v in (2**53, 2**53 + 2, 2**63, -1, 0)]
        edits += [(k, None, rng.choice([-1, -2**62, 2**64, 1e300]))
                  for k in ("predicted_peak_bytes", "fixed_bytes")]
        for field, index, value in edits + edits_arena:
            bad = copy.deepcopy(good)
            if index is None:
                bad[field] = value
            else:
                bad[field][index]["shape"][0] = value
            edited = os.path.join(work, f"m{run}-edited.json")
            with open(edited, "w") as f:
                json.dump(bad, f)
            p = checked([runner, edited, "--steps=1"], edited, (1,))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tool", choices=["solve", "opt", "both", "sizes"],
                   default="both")
    a = p.parse_args()
    rng = random.Random(a.seed)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        def report(what, args, path, output):
            keep = f"/tmp/remat-fuzz-{a.seed}-{len(failures)}" + \
                os.path.splitext(path)[1]
            shutil.copy(path, keep)
            failures.append(what)
            print(f"{what}: {' '.join(args[:1] + [keep] + args[2:])}\n"
                  f"{output[-600:]}", flush=True)
        if a.tool in ("solve", "both"):
            fuzz_solve(rng, os.path.join(a.build, "bin", "remat-solve"),
                       a.runs, work, report)
        if a.tool in ("opt", "both"):
            fuzz_opt(rng, os.path.join(a.build, "bin", "remat-opt"), a.runs,
                     work, report)
        if a.tool == "sizes":
            fuzz_sizes(rng, a.build, a.runs, work, report)
    print(f"fuzz: {a.runs} runs per tool, seed {a.seed}: "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
