"""The GPU libraries beside torch (CuPy, JAX, ONNX Runtime, TensorFlow, numba, Triton) and the training frameworks
(Lightning, Transformers, Accelerate) this Python has, each with its version and the CUDA it was built for, from
their installed metadata (`backends.gpu_libraries`: nothing imported)."""

from __future__ import annotations

from gputriage.backends.gpu_libraries import installed
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact

NAME = "python.gpu_libraries"


def collect(ctx: Context) -> list[Fact]:
    return [fact(NAME, installed(), "importlib.metadata")]
