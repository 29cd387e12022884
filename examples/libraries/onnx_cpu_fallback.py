"""A two-stage pipeline: a small convolutional encoder in PyTorch on the GPU, then a classifier head exported to
ONNX and run by ONNX Runtime, which was asked for CUDA but has only its CPU provider here and falls back to it
(four 2048-wide fp32 layers on a batch of 256 features copied to the host). Each step the GPU waits while the
host computes the head on its cores: host_bound."""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from gputriage import step

BATCH, WIDTH, LAYERS = 256, 2048, 4


def head_model(path: Path) -> None:
    """An MLP head (MatMul, Add, Relu) written as an ONNX graph."""
    rng = np.random.default_rng(0)
    nodes, inits, last = [], [], "x"
    for i in range(LAYERS):
        w = numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / 45).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(np.zeros(WIDTH, np.float32), f"b{i}")
        inits += [w, b]
        nodes += [
            helper.make_node("MatMul", [last, f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
            helper.make_node("Relu", [f"a{i}"], [f"h{i}"]),
        ]
        last = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, WIDTH])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, [None, WIDTH])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(path))


def main(seconds: float = 10.0) -> None:
    encoder = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(8),
        torch.nn.Flatten(),
        torch.nn.Linear(32 * 64, WIDTH),
    ).cuda()
    images = torch.randn(BATCH, 3, 64, 64, device="cuda")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "head.onnx"
        head_model(path)
        session = ort.InferenceSession(str(path), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    print(f"onnxruntime {ort.__version__} providers: {session.get_providers()}")
    t0, steps = time.perf_counter(), 0
    with torch.no_grad():
        while time.perf_counter() - t0 < seconds:
            features = encoder(images).cpu().numpy()
            logits = session.run(None, {"x": features})[0]
            steps += 1
            step(samples=BATCH)
    dt = time.perf_counter() - t0
    print(f"throughput: {steps * BATCH / dt:,.0f} samples/s ({logits.shape})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
