#!/usr/bin/env python3
"""Checks that a file is a CUDA cubin: a 64-bit ELF for machine EM_CUDA.

usage: check-cubin.py FILE...
"""
import struct
import sys

EM_CUDA = 190


def main():
    status = 0
    for path in sys.argv[1:]:
        data = open(path, "rb").read()
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2:
            print(f"error: {path} is not a 64-bit ELF file")
            status = 1
            continue
        machine = struct.unpack_from("<H", data, 18)[0]
        if machine != EM_CUDA:
            print(f"error: {path} is ELF for machine {machine}, not EM_CUDA")
            status = 1
            continue
        print(f"ok: {path.rsplit('/', 1)[-1]}: cubin, {len(data)} bytes")
    return status


if __name__ == "__main__":
    sys.exit(main())
