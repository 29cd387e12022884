"""Run in a child process by `check`: keep every GPU's PCIe link busy for a moment, so the link is
read while it works (links downshift at idle). Uses the CUDA driver API through ctypes — no
framework import, so it starts in a fraction of a second.

Protocol on stdout: with `--wait`, `READY` once set up, then copies start when a line comes on
stdin; `LOAD` once copies are flowing on every GPU, `DONE` when they stop, or one
line `ERROR <why>`. Bounded: 64 MiB of device memory and 64 MiB of pinned host memory per GPU,
for `--ms` milliseconds.
"""

from __future__ import annotations

import ctypes
import sys
import time

CHUNK_BYTES = 64 * 2**20


def _check(lib: ctypes.CDLL, ret: int, what: str) -> None:
    if ret != 0:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(ret, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else ret}")


def main(argv: list[str]) -> int:
    duration_ms = float(argv[argv.index("--ms") + 1]) if "--ms" in argv else 300.0
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        print(f"ERROR libcuda.so.1: {exc}", flush=True)
        return 0
    try:
        _check(cuda, cuda.cuInit(0), "cuInit")
        count = ctypes.c_int()
        _check(cuda, cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        work = []
        for d in range(count.value):
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            _check(cuda, cuda.cuDeviceGet(ctypes.byref(dev), d), "cuDeviceGet")
            _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            _check(cuda, cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            dptr, hptr = ctypes.c_uint64(), ctypes.c_void_p()
            _check(cuda, cuda.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(CHUNK_BYTES)), "cuMemAlloc")
            _check(cuda, cuda.cuMemAllocHost_v2(ctypes.byref(hptr), ctypes.c_size_t(CHUNK_BYTES)), "cuMemAllocHost")
            work.append((ctx, dptr, hptr))
        if "--wait" in argv:  # set up first, then copy when told: the parent's idle window stays clean
            print("READY", flush=True)
            sys.stdin.readline()
        print("LOAD", flush=True)
        end = time.monotonic() + duration_ms / 1000.0
        while time.monotonic() < end:
            for ctx, dptr, hptr in work:
                cuda.cuCtxSetCurrent(ctx)
                _check(cuda, cuda.cuMemcpyHtoD_v2(dptr, hptr, ctypes.c_size_t(CHUNK_BYTES)), "cuMemcpyHtoD")
        print("DONE", flush=True)
        for ctx, dptr, hptr in work:
            cuda.cuCtxSetCurrent(ctx)
            cuda.cuMemFree_v2(dptr)
            cuda.cuMemFreeHost(hptr)
    except RuntimeError as exc:
        print(f"ERROR {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
