"""The GPU libraries beside torch installed in this Python, and the training frameworks around it, with the CUDA
each was built for, read from their installed metadata without importing them (an import costs seconds, and may
take a GPU): CuPy's wheel names its CUDA (`cupy-cuda12x`), JAX's GPU plugin its own (`jax-cuda12-plugin`), ONNX
Runtime's GPU package writes its CUDA in `capi/build_and_package_info.py` (the CPU package has no GPU provider),
TensorFlow in `python/platform/build_info.py`."""

from __future__ import annotations

import ast
import re
from importlib import metadata
from typing import Any, Optional

# library -> the distributions that install it, and how each says its CUDA build
CANDIDATES: dict[str, tuple[str, ...]] = {
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy-rocm-6-0", "cupy-rocm-5-0", "cupy"),
    "jax": ("jax",),
    "onnxruntime": ("onnxruntime-gpu", "onnxruntime", "onnxruntime-directml", "onnxruntime-openvino"),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"),
    "numba": ("numba",),
    "triton": ("triton", "pytorch-triton"),
    "lightning": ("lightning", "pytorch-lightning"),
    "transformers": ("transformers",),
    "accelerate": ("accelerate",),
}
JAX_PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin", "jax-cuda11-plugin", "jax-rocm60-plugin")
NUMBA_CUDA = ("numba-cuda",)
TRAINING = frozenset(("lightning", "transformers", "accelerate"))  # frameworks: no CUDA of their own
_CUPY_CUDA = re.compile(r"cupy-(cuda|rocm)[-_]?(\d+)(x|-\d+)?")


def _dist(names: tuple[str, ...]) -> Optional[Any]:
    for name in names:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # unreadable metadata: as if not installed
            continue
    return None


def _assigned(source: str, name: str) -> Optional[str]:
    """The string a module assigns to `name` (`cuda_version = "12.4"`), or a dict literal's entry of that name
    (`build_info = {'cuda_version': '12.3', ...}`), read without running it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets) and node.value.value:
                return str(node.value.value)
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Constant) and v.value:
                    return str(v.value)
    return None


def _file_text(dist: Any, relative: str) -> str:
    try:
        return str(dist.locate_file(relative).read_text(encoding="utf-8"))
    except Exception:
        return ""


def _cuda_of(library: str, dist: Any) -> str:
    """The CUDA (or ROCm) a library's install was built for; "none" for a CPU-only build, "" where unknown."""
    name = str(dist.metadata["Name"]).lower().replace("_", "-")
    if library == "cupy":
        m = _CUPY_CUDA.fullmatch(name)
        return f"{'CUDA' if m.group(1) == 'cuda' else 'ROCm'} {m.group(2)}" if m else ""
    if library == "jax":
        plugin = _dist(JAX_PLUGINS)
        if plugin is None:
            return "none"
        m = re.search(r"(cuda|rocm)(\d+)", str(plugin.metadata["Name"]).lower())
        return f"{'CUDA' if m and m.group(1) == 'cuda' else 'ROCm'} {m.group(2) if m else '?'}"
    if library == "onnxruntime":
        if name != "onnxruntime-gpu":
            return "none" if name == "onnxruntime" else ""
        cuda = _assigned(_file_text(dist, "onnxruntime/capi/build_and_package_info.py"), "cuda_version")
        return f"CUDA {cuda}" if cuda else ""
    if library == "tensorflow":
        info = _file_text(dist, "tensorflow/python/platform/build_info.py")
        cuda = _assigned(info, "cuda_version")
        return f"CUDA {cuda}" if cuda else ("none" if info else "")
    if library == "numba":
        return "numba-cuda" if _dist(NUMBA_CUDA) is not None else ""
    return ""


def installed() -> dict[str, dict[str, str]]:
    """Each GPU library and training framework this Python has: its package, version and (GPU libraries) CUDA
    build ("none": a CPU-only build; "": unknown)."""
    out: dict[str, dict[str, str]] = {}
    for library, names in CANDIDATES.items():
        dist = _dist(names)
        if dist is None:
            continue
        row = {"package": str(dist.metadata["Name"]), "version": str(dist.version)}
        if library not in TRAINING:
            row["cuda"] = _cuda_of(library, dist)
        out[library] = row
    return out
