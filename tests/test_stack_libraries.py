"""The host side of the GPU libraries beside PyTorch and of the training frameworks around it, as the stack sampler
classifies a thread's frames (`inworkload.stack_libraries`): a CuPy or `jax.jit` call that shows no frame is read
from the line that makes it, its names resolved to their modules; the Python of JAX, numba, Triton, TensorFlow and
ONNX Runtime by its files and functions; Lightning's loop as the loop's own host work, never as input."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from gputriage.inworkload import stack_classify as sc
from gputriage.inworkload import stack_libraries as sl
from gputriage.inworkload import stack_sampler as ss

SITE = "/usr/lib/python3/dist-packages"


def _library(name: str, load: bool = True) -> Any:
    """A GPU library's CPU build (`load`: imported here; else only found), or the test skipped (failed in CI:
    GPUTRIAGE_REQUIRE_LIBRARIES=1)."""
    try:
        if not load and importlib.util.find_spec(name) is None:
            raise ImportError(name)
        return importlib.import_module(name) if load else None
    except ImportError:
        assert os.environ.get("GPUTRIAGE_REQUIRE_LIBRARIES") != "1", (
            f"{name} is needed (pip install gputriage[libraries-test])"
        )
        pytest.skip(f"{name} is not installed")


@dataclass
class Code:
    co_filename: str
    co_name: str


@dataclass
class Frame:
    """A frame as py-spy gives it (no variables), or with the variables a live frame would have."""

    f_code: Code
    f_lineno: int
    f_back: Optional[Frame]
    f_locals: Any = None


def stack(*frames: tuple[str, str], locals_of_leaf: Any = None) -> Frame:
    """A chain of frames, outermost first, each (path, function): the innermost returned."""
    inner: Optional[Frame] = None
    for path, function in frames:
        inner = Frame(Code(path, function), 1, inner)
    assert inner is not None
    if locals_of_leaf is not None:
        inner.f_locals = locals_of_leaf
    return inner


def category(frame: Any, on_gpu: bool | None = True, cuda: bool = True) -> str:
    return ss.CATEGORIES[sc.Classifier(sl.OnGpu(assume=on_gpu)).classify(frame, cuda)[0]]


USER = ("/home/me/train.py", "<module>")


def jax_file(name: str) -> str:
    return f"{SITE}/jax/_src/{name}"


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([USER, (jax_file("numpy/array_methods.py"), "deferring_binary_op")], "launch"),  # x * 2: dispatched
        ([USER, (jax_file("array.py"), "__float__"), (jax_file("array.py"), "_value")], "gpu_wait"),  # float(x)
        ([USER, (jax_file("api.py"), "device_get")], "gpu_wait"),
        ([USER, (jax_file("api.py"), "device_put"), (jax_file("dispatch.py"), "_device_put_impl")], "copy"),
        ([USER, (jax_file("pjit.py"), "cache_miss"), (jax_file("interpreters/mlir.py"), "lower_jaxpr")], "compile"),
        ([USER, (jax_file("pjit.py"), "cache_miss"), (jax_file("compiler.py"), "backend_compile")], "compile"),
        ([USER, (f"{SITE}/cupy/_creation/from_data.py", "asarray")], "copy"),  # a host array uploaded
        ([USER, (f"{SITE}/cupy/__init__.py", "asnumpy")], "gpu_wait"),
        ([USER, (f"{SITE}/cupy/random/_generator.py", "standard_normal")], "launch"),
        ([USER, (f"{SITE}/cupy/cuda/compiler.py", "compile_with_cache")], "compile"),
        ([USER, (f"{SITE}/numba/cuda/api.py", "to_device")], "copy"),
        ([USER, (f"{SITE}/numba/cuda/cudadrv/devicearray.py", "copy_to_host")], "gpu_wait"),
        ([USER, (f"{SITE}/numba/cuda/dispatcher.py", "__call__")], "launch"),  # kernel[grid, block](...)
        ([USER, (f"{SITE}/numba/core/typed_passes.py", "run_pass")], "compile"),
        ([USER, (f"{SITE}/triton/runtime/jit.py", "run")], "launch"),  # a Triton kernel launched directly
        ([USER, (f"{SITE}/triton/runtime/autotuner.py", "_bench")], "compile"),
        ([USER, (f"{SITE}/tensorflow/python/framework/ops.py", "numpy")], "gpu_wait"),  # EagerTensor.numpy()
        ([USER, (f"{SITE}/tensorflow/python/ops/math_ops.py", "add")], "launch"),
    ],
)
def test_a_gpu_librarys_python_says_what_the_thread_does(frames: list[tuple[str, str]], expected: str) -> None:
    assert category(stack(*frames)) == expected


def test_a_library_on_the_cpu_runs_its_ops_on_the_host() -> None:
    """JAX on its CPU backend, a numba function on the CPU: what would launch, wait or copy on a GPU computes."""
    for frames in (
        [USER, (jax_file("numpy/array_methods.py"), "deferring_binary_op")],
        [USER, (jax_file("array.py"), "block_until_ready")],
    ):
        assert category(stack(*frames), on_gpu=False, cuda=False) == "host_ops"


def test_a_plain_library_or_the_stdlib_under_a_gpu_library_is_that_librarys_work() -> None:
    """numpy called by JAX's Python, a stdlib helper under it: JAX's dispatch, not the workload's host compute."""
    frames = [USER, (jax_file("numpy/lax_numpy.py"), "reshape"), (f"{SITE}/numpy/core/fromnumeric.py", "shape")]
    assert category(stack(*frames)) == "launch"
    frames = [USER, (jax_file("api.py"), "device_get"), (f"{sc._STDLIB_DIR}functools.py", "wrapper")]
    assert category(stack(*frames)) == "gpu_wait"


class Session:
    """An ONNX Runtime session as its `run` frame holds it (`Session._providers`: what the C++ session gave it)."""

    def __init__(self, providers: list[str]) -> None:
        self._providers = providers


ORT_RUN = f"{SITE}/onnxruntime/capi/onnxruntime_inference_collection.py"


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        (["CPUExecutionProvider"], "host_ops"),  # asked for CUDA, fell back to the CPU: the host computes the model
        (["CUDAExecutionProvider", "CPUExecutionProvider"], "launch"),
        (["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"], "launch"),
    ],
)
def test_onnx_runtimes_run_is_told_by_its_sessions_providers(providers: list[str], expected: str) -> None:
    frame = stack(USER, (ORT_RUN, "run"), locals_of_leaf={"self": Session(providers)})
    assert category(frame) == expected
    assert category(frame, cuda=False) == expected  # a process whose only GPU work is the session's


def test_onnx_runtime_building_a_session_compiles_and_an_unknown_session_launches() -> None:
    assert category(stack(USER, (ORT_RUN, "__init__"), (ORT_RUN, "_create_inference_session"))) == "compile"
    assert category(stack(USER, (ORT_RUN, "run"))) == "launch"  # py-spy: no variables, providers unknown


def fake_module(tmp_path: Path, name: str, source: str) -> types.ModuleType:
    """A module of that name loaded from a file of its own (what resolution reads: the module's name)."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE_CUPY = """
class ndarray:
    def __mul__(self, other):
        return self
    def get(self):
        return self
def sin(x):
    return x
def asnumpy(x):
    return x
def asarray(x):
    return x
"""


def test_a_line_calling_cupy_launches_waits_or_copies_by_the_names_it_resolves_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CuPy launches its kernels from Cython: no frame below the workload's line. The line's names, resolved through
    the frame's variables to CuPy's modules, tell a launch (`cp.sin`, an operator on its array), a wait (`asnumpy`,
    `.get()`) and a copy (`asarray`); numpy's names are no GPU work; where CuPy is not on the GPU, its lines compute
    on the host."""
    gpu = fake_module(tmp_path, "cupy", FAKE_CUPY)
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    import numpy as np

    for on_gpu in (True, False):
        classifier = sc.Classifier(sl.OnGpu(assume=on_gpu))
        seen: dict[str, str] = {}

        def spy(what: str, value: Any = None, classifier: sc.Classifier = classifier, seen: dict = seen) -> Any:
            """Called from the line under test: its frame classified as the sampler would find it at that line."""
            seen[what] = ss.CATEGORIES[classifier.classify(sys._getframe(1), True)[0]]
            return value

        cp, x = gpu, gpu.ndarray()
        y = cp.sin(spy("cp.sin", x))
        y = y * spy("operator", 2.0)
        h = cp.asnumpy(spy("asnumpy", y))
        h = y.get(*spy("get", ()))
        d = cp.asarray(spy("asarray", h))
        n = np.sin(spy("numpy", 1.0))
        assert (d, n) is not None
        gpu_work = ("launch", "launch", "gpu_wait", "gpu_wait", "copy") if on_gpu else ("host_ops",) * 5
        lines = ("cp.sin", "operator", "asnumpy", "get", "asarray", "numpy")
        assert seen == dict(zip(lines, (*gpu_work, "host_compute")))


def test_a_line_read_without_variables_resolves_its_names_through_the_files_imports(tmp_path: Path) -> None:
    """py-spy's frames hold no variables: `import cupy as cp`, `from jax import numpy as jnp` say what the names
    are; a variable's type (an operator on an array) stays unknown."""
    script = tmp_path / "loop.py"
    script.write_text(
        "import cupy as cp\nfrom jax import numpy as jnp, jit\nimport numpy as np\n"
        "x = cp.sin(x)\ny = jnp.tanh(y).block_until_ready()\nz = x * 2\nw = np.sin(w)  # cp.sin in a comment\n"
    )
    assert sl.imports_of(str(script)) == {"cp": "cupy", "jnp": "jax.numpy", "jit": "jax.jit", "np": "numpy"}
    got = [category(Frame(Code(str(script), "<module>"), line, None)) for line in (4, 5, 6, 7)]
    assert got == ["launch", "gpu_wait", "host_compute", "host_compute"]


def test_names_are_read_outside_strings_and_comments() -> None:
    assert sl.names_in("y = cp.cuda.Stream.null.synchronize()  # not jnp.sin") == [
        ("y", []),
        ("cp", ["cuda", "Stream", "null", "synchronize"]),
    ]
    assert sl.names_in("print('cp.sin', f\"{jnp}\")") == [("print", [])]


def test_which_libraries_compute_on_the_gpu_is_read_from_what_the_process_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JAX's initialized backends by their platform names, CuPy once imported, TensorFlow's eager context's devices;
    nothing is called."""
    for name in ("cupy", "jax._src.xla_bridge", "tensorflow.python.eager.context", "numba.cuda", "triton"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    on = sl.OnGpu()
    assert not on.refresh() and not on.any()
    bridge = types.ModuleType("jax._src.xla_bridge")
    bridge._backends = {"cpu": object()}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jax._src.xla_bridge", bridge)
    assert not on.refresh() and not on.on(sl.JAX)
    bridge._backends = {"cpu": object(), "cuda": object()}  # type: ignore[attr-defined]
    assert on.refresh() and on.on(sl.JAX) and on.any()
    context = types.ModuleType("tensorflow.python.eager.context")
    context._context = types.SimpleNamespace(  # type: ignore[attr-defined]
        _context_devices=["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/device:GPU:0"]
    )
    monkeypatch.setitem(sys.modules, "tensorflow.python.eager.context", context)
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    on.refresh()
    assert on.on(sl.TF) and on.on(sl.CUPY) and not on.on(sl.ORT)


def test_the_sampler_counts_a_process_with_a_gpu_library_on_the_gpu_as_one_using_cuda(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A CuPy process without torch: its waits and copies stay waits and copies (not the host's compute), and its
    report says it uses CUDA (the process whose stacks count)."""
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    sampler = ss.StackSampler(str(tmp_path))
    sampler._refresh_skipped()
    assert sampler.cuda


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (f"{SITE}/jax/_src/dispatch.py", sc.GPU_LIB),
        (f"{SITE}/cupyx/scipy/ndimage/_filters.py", sc.GPU_LIB),
        (f"{SITE}/onnxruntime/capi/onnxruntime_inference_collection.py", sc.GPU_LIB),
        (f"{SITE}/pytorch_lightning/loops/fit_loop.py", sc.FRAMEWORK),
        (f"{SITE}/lightning/pytorch/trainer/call.py", sc.FRAMEWORK),
        (f"{SITE}/lightning_fabric/utilities/apply_func.py", sc.FRAMEWORK),
        (f"{SITE}/transformers/trainer.py", sc.FRAMEWORK),
        (f"{SITE}/accelerate/accelerator.py", sc.FRAMEWORK),
        (f"{SITE}/transformers/models/bert/modeling_bert.py", sc.LIBRARY),  # a model's code: torch ops
        (f"{SITE}/jax/_src/interpreters/partial_eval.py", sc.COMPILER),
    ],
)
def test_what_a_librarys_file_is(path: str, kind: int) -> None:
    assert sc.file_kind(path) == kind


LIGHTNING = f"{SITE}/pytorch_lightning"


def test_a_training_frameworks_loop_is_its_own_host_work_and_its_launches_copies_and_waits_are_theirs() -> None:
    """Lightning's hooks, logging and progress bar (a plain library under them: tqdm) are the loop; its line that
    moves the batch is a copy, the one that runs backward a launch; the DataLoader it drives makes input."""
    hook = [USER, (f"{LIGHTNING}/loops/fit_loop.py", "run"), (f"{LIGHTNING}/trainer/call.py", "_call_callback_hooks")]
    assert category(stack(*hook)) == "loop"
    assert category(stack(*hook, (f"{SITE}/tqdm/std.py", "refresh"))) == "loop"
    assert category(stack(*hook, (f"{sc._STDLIB_DIR}logging/__init__.py", "debug"))) == "loop"
    torch_adam = (f"{SITE}/torch/optim/adam.py", "_single_tensor_adam")
    assert category(stack(*hook, torch_adam)) == "launch"
    fetch = (f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch")
    assert category(stack(*hook, fetch)) == "host_compute"  # collating on the main thread: input


def test_lightnings_real_loop_is_the_loop_and_its_dataloader_makes_input(tmp_path: Path) -> None:
    """A real Lightning fit on the CPU: from inside a callback hook, the frames that called it are Lightning's loop;
    from inside the DataLoader's collate function, the DataLoader's fetch (input made on the main thread)."""
    pl = pytest.importorskip("pytorch_lightning")
    import torch

    classifier = sc.Classifier(sl.OnGpu(assume=False))
    seen: dict[str, str] = {}

    def at(frame: Any) -> str:
        return ss.CATEGORIES[classifier.classify(frame, True)[0]]

    class Spy(pl.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, *args: Any) -> None:
            seen.setdefault("hook", at(sys._getframe(1)))

    def collate(rows: list[Any]) -> Any:
        seen.setdefault("collate", at(sys._getframe(1)))
        return torch.utils.data.default_collate(rows)

    class Tiny(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(4, 1)

        def training_step(self, batch: Any, i: int) -> Any:
            return self.net(batch[0]).pow(2).mean()

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(8, 4))
    trainer = pl.Trainer(
        accelerator="cpu",
        max_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[Spy()],
        default_root_dir=str(tmp_path),
    )
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=4, collate_fn=collate))
    assert seen == {"hook": "loop", "collate": "host_compute"}


JAX_LINES = """
import json, sys
import jax
from gputriage.inworkload import stack_classify as sc
from gputriage.inworkload import stack_libraries as sl
from gputriage.inworkload import stack_sampler as ss
jnp = jax.numpy
x = jnp.ones(16)
x.block_until_ready()
on = sl.OnGpu()
on.refresh()
got = {"on_gpu": on.on(sl.JAX), "cpu": [], "gpu": []}
for key, state in (("cpu", on), ("gpu", sl.OnGpu(assume=True))):
    classifier = sc.Classifier(state)

    def spy(value, classifier=classifier, key=key):
        got[key].append(ss.CATEGORIES[classifier.classify(sys._getframe(1), True)[0]])
        return value

    y = jnp.sin(spy(x))
    y.block_until_ready(*spy(()))
    jax.device_put(spy(1.0))
print(json.dumps(got))
"""


def test_jax_on_its_cpu_backend_is_told_apart_from_jax_on_a_gpu(tmp_path: Path) -> None:
    """Real JAX (its CPU build): after an op its backend is the CPU's, so its lines compute on the host; where JAX
    holds a GPU backend the same lines launch, wait and copy. In a process of its own: JAX's threads would be
    inherited by the processes this test process forks later."""
    _library("jax", load=False)
    script = tmp_path / "jax_lines.py"
    script.write_text(JAX_LINES)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"on_gpu": False, "cpu": ["host_ops"] * 3, "gpu": ["launch", "gpu_wait", "copy"]}


def test_onnx_runtime_on_the_cpu_build_falls_back_to_the_cpu_and_is_read_as_such(tmp_path: Path) -> None:
    """Real ONNX Runtime (its CPU package): a session asked for CUDA gets the CPU's provider; its run frame is the
    host computing the model."""
    ort = _library("onnxruntime")
    onnx = _library("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(path))
    with pytest.warns(UserWarning):
        session = ort.InferenceSession(str(path), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    run_file = sys.modules[type(session).__module__].__file__
    frame = stack(USER, (run_file, "run"), locals_of_leaf={"self": session})
    assert sl.session_providers(frame) == ["CPUExecutionProvider"]
    assert category(frame) == "host_ops"


def test_an_installed_file_is_named_by_its_package_not_by_the_folders_above_it() -> None:
    """A virtual environment in /opt/torch (as on the H100 the libraries were recorded on): ONNX Runtime's files in
    it are ONNX Runtime's, not torch's, and a plain library under a home called jax is no GPU library."""
    venv = "/opt/torch/.venv/lib/python3.12/site-packages"
    assert sc.file_kind(f"{venv}/onnxruntime/capi/onnxruntime_inference_collection.py") == sc.GPU_LIB
    assert sc.file_kind(f"{venv}/cupy/_core/core.py") == sc.GPU_LIB
    assert sc.file_kind(f"{venv}/torch/nn/modules/module.py") == sc.MODULE
    assert sc.file_kind(f"{venv}/torch/utils/data/dataloader.py") == sc.LOADER
    assert sc.file_kind("/home/jax/.venv/lib/python3.11/site-packages/numpy/linalg/linalg.py") == sc.LIBRARY
    assert sl.library_of(f"{venv}/onnxruntime/capi/onnxruntime_inference_collection.py") == sl.ORT
    assert sl.library_of("/srv/jax/.venv/lib/python3.11/site-packages/requests/api.py") is None
    assert sl.library_of("/work/jax/jax/_src/api.py") == sl.JAX  # a checkout: its path is all there is
