"""Run in a child process by `check`: what this Python's torch sees, then a brief GPU load.

Protocol on stdout, one line each: a JSON object with the framework facts; then, when a load was
asked for and CUDA works, `LOAD` once the GPUs are busy and `DONE` when the load has ended.
Everything is bounded: the load lasts `--load-ms` milliseconds on ~64 MiB per GPU.
"""

from __future__ import annotations

import json
import sys
import time


def framework_info() -> dict:
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install raising OSError
        return {"installed": False, "error": f"{type(exc).__name__}: {exc}"}
    info: dict = {"installed": True, "version": torch.__version__, "cuda_build": torch.version.cuda}
    try:
        info["available"] = bool(torch.cuda.is_available())
        info["arch_list"] = list(torch.cuda.get_arch_list()) if info["cuda_build"] else []
        info["device_count"] = torch.cuda.device_count() if info["available"] else 0
        info["capabilities"] = [list(torch.cuda.get_device_capability(i)) for i in range(info["device_count"])]
        info["bf16"] = [bool(torch.cuda.is_bf16_supported())] if info["available"] else []
    except Exception as exc:
        info["available"] = False
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def load(duration_ms: float) -> None:
    import torch

    n = 2048
    mats = []
    for d in range(torch.cuda.device_count()):
        a = torch.randn(n, n, device=f"cuda:{d}", dtype=torch.float16)
        mats.append((a, a.clone()))
    for a, b in mats:  # warm-up: handles, kernels
        a @ b
    for d in range(len(mats)):
        torch.cuda.synchronize(d)
    print("LOAD", flush=True)
    end = time.monotonic() + duration_ms / 1000.0
    while time.monotonic() < end:
        for a, b in mats:
            for _ in range(8):
                a @ b
        for d in range(len(mats)):
            torch.cuda.synchronize(d)
    print("DONE", flush=True)


def main(argv: list[str]) -> int:
    load_ms = 0.0
    if len(argv) >= 2 and argv[0] == "--load-ms":
        load_ms = float(argv[1])
    info = framework_info()
    print(json.dumps(info), flush=True)
    if load_ms > 0 and info.get("available"):
        try:
            load(load_ms)
        except Exception as exc:
            print(json.dumps({"load_error": f"{type(exc).__name__}: {exc}"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
