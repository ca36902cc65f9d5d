#!/usr/bin/env python3
"""Checks train.dropout's mask against a reference Philox4x32-10.

usage: dropout-philox.py --compile REMAT_COMPILE --run REMAT_RUN --out DIR

The reference is first checked against Random123's published known-answer
vectors. The model is loss = sum(dropout(w)) with w = 0 and learning rate 1,
so the parameter after one SGD step is -mask / (1 - p), read back with
--save-params and compared element by element with the reference mask.
"""
import argparse
import os
import struct
import subprocess
import sys

M = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    c, k = list(ctr), list(key)
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & M, p1 & M,
             ((p0 >> 32) ^ c[3] ^ k[1]) & M, p0 & M]
        k = [(k[0] + 0x9E3779B9) & M, (k[1] + 0xBB67AE85) & M]
    return c


KAT = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([M, M, M, M], [M, M], [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
     [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]

ROWS, COLS, P = 5, 7, 0.25
SEED, OFFSET = 0x0123456789ABCDEF, 0x0000000500000003

MODEL = f"""
func.func @philox(%w: tensor<{ROWS}x{COLS}xf64> {{train.role = #train<role param>, train.name = "w"}},
                  %s: tensor<i64> {{train.role = #train<role input>, train.name = "seed"}},
                  %o: tensor<i64> {{train.role = #train<role input>, train.name = "offset"}})
    -> tensor<f64> {{
  %d = train.dropout %w, %s, %o {{probability = {P} : f64}} : tensor<{ROWS}x{COLS}xf64>
  %l = train.sum %d {{dims = array<i64: 0, 1>}} : tensor<{ROWS}x{COLS}xf64> -> tensor<f64>
  return %l : tensor<f64>
}}
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--compile", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    for ctr, key, want in KAT:
        got = philox4x32_10(ctr, key)
        if got != want:
            print(f"reference Philox wrong: {ctr} {key}: {got} != {want}")
            return 1
    print("reference Philox4x32-10 matches the known-answer vectors")

    os.makedirs(a.out, exist_ok=True)
    path = lambda name: os.path.join(a.out, name)
    with open(path("philox.mlir"), "w") as f:
        f.write(MODEL)
    with open(path("w.bin"), "wb") as f:
        f.write(bytes(8 * ROWS * COLS))
    with open(path("seed.bin"), "wb") as f:
        f.write(struct.pack("<q", SEED))
    with open(path("offset.bin"), "wb") as f:
        f.write(struct.pack("<q", OFFSET))
    subprocess.run([a.compile, path("philox.mlir"), "-o", path("philox.so"),
                    "--learning-rate=1"], check=True)
    subprocess.run([a.run, path("philox.json"), "--steps=1",
                    f"--input=w={path('w.bin')}",
                    f"--input=seed={path('seed.bin')}",
                    f"--input=offset={path('offset.bin')}",
                    f"--save-params={path('out.bin')}"], check=True,
                   stdout=subprocess.DEVNULL)
    data = open(path("out.bin"), "rb").read()
    got = struct.unpack(f"<{ROWS * COLS}d", data[:8 * ROWS * COLS])
    scale = 1.0 / (1.0 - P)
    bad = kept = 0
    for i in range(ROWS * COLS):
        word = philox4x32_10([i & M, i >> 32, OFFSET & M, OFFSET >> 32],
                             [SEED & M, SEED >> 32])[0]
        keep = (word >> 8) * (1.0 / 16777216.0) >= P
        kept += keep
        if got[i] != (-scale if keep else 0.0):
            bad += 1
            print(f"element {i}: got {got[i]}, expected keep={keep}")
    print(f"dropout mask: {ROWS * COLS} elements, {kept} kept, {bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
