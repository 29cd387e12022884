"""Run in a child process by `check`: what this Python's torch sees, as one JSON line.

torch is imported in a child so its import time and memory stay out of gputriage's process.
`is_available()` does not create a CUDA context. Given a cache key, the answer is also cached, so a
`check` that stopped waiting for it finds it next time.
"""

from __future__ import annotations

import json
import sys

from gputriage.backends import cache


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
    except Exception as exc:
        info["available"] = False
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def main(argv: list[str]) -> int:
    """`--cache NAME --key KEY`: also keep the answer in gputriage's cache under that key, before printing it (the
    process that started this one may have stopped waiting: the next one reads the cache)."""
    info = framework_info()
    options = dict(zip(argv[::2], argv[1::2]))
    if "--cache" in options and "--key" in options:
        cache.write(options["--cache"], info | {"key": options["--key"]})
    try:
        print(json.dumps(info), flush=True)
    except BrokenPipeError:  # nobody reads any more: the cache holds the answer
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
