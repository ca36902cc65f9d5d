"""Compares a malloc build's run with an arena build's (remat-run --json)."""
import json
import sys

plain, arena = (json.load(open(p)) for p in sys.argv[1:3])
manifest = json.load(open(sys.argv[3]))
print("losses bitwise equal:", plain["losses"] == arena["losses"])
print("parameters equal:", plain["params_fnv1a"] == arena["params_fnv1a"])
size, live = manifest["arena_bytes"], manifest["arena_live_bytes"]
print("arena >= live:", size >= live > 0)
pairs = manifest["arena_offsets"]
print("offsets inside:", len(pairs) % 2 == 0 and all(
    0 <= o and o + n <= size for o, n in zip(pairs[::2], pairs[1::2])))
print("measured == predicted:",
      arena["measured_peak_bytes"] == arena["predicted_peak_bytes"])
limit = manifest["memory_limit_bytes"]
print("within the limit:", limit is None or arena["measured_peak_bytes"] <= limit)
