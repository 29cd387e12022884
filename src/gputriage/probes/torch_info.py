"""Run in a child process by `check`: what this Python's torch sees, as one JSON line.

torch is imported in a child so its import time and memory stay out of gputriage's process.
`is_available()` does not create a CUDA context.
"""

from __future__ import annotations

import json
import sys


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
    print(json.dumps(framework_info()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
