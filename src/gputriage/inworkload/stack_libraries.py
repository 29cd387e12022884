"""What a thread does in the GPU libraries beside PyTorch, and in the training frameworks around it, as the stack
sampler reads its frames (`stack_sampler`; standard library only: it runs inside the workload).

- The Python of a GPU library (CuPy, JAX, numba's CUDA target, Triton, TensorFlow, ONNX Runtime) is known by its
  path, and what it does by its functions' names, from the innermost frame of the library outward: a wait for the
  GPU (JAX's `block_until_ready`, `__float__`, `_value`, `device_get`; CuPy's `asnumpy`; numba's `copy_to_host`,
  `synchronize`), a copy to it (JAX's `device_put`, `jnp.asarray`; CuPy's `asarray`; numba's `to_device`), else
  dispatching its ops (`launch`). Compiling is told by the compilers' files (`COMPILERS`). A library computing on the
  CPU (JAX's CPU backend, ONNX Runtime's CPU provider, numba's CPU functions) runs its ops on the host (`host_ops`).
- ONNX Runtime's `InferenceSession.run` is one C++ call: the session's providers tell where it computes (a GPU
  provider first: `launch`; only the CPU's: `host_ops`).
- A call into compiled code shows no frame of its own (CuPy's kernels are launched from Cython, a `jax.jit`
  function from C++): the line of the workload's code that calls it is read, and each name it uses resolved through
  the frame's variables (or, for py-spy's frames, the file's imports) to the module that defines it. A name of a GPU
  library makes the line a launch of its ops, a wait (`synchronize`, `block_until_ready`, `asnumpy`, `.get`) or a
  copy (`asarray`, `device_put`, `.set`) by the attributes the line calls.
- A training framework's own code (PyTorch Lightning's loop, hooks, callbacks, logging and progress bar; Hugging
  Face's Trainer and Accelerate) is the loop's host work (`loop`), not input: where it calls torch, the DataLoader,
  or the workload's own code, those frames say what it does.
Whether a library computes on the GPU is read from the modules it loaded (`OnGpu`), never by calling into it."""

from __future__ import annotations

import builtins
import keyword
import re
import sys
import types
from typing import Any, Optional

GPU_WAIT, COPY, COMPILE, LAUNCH, LOOP, HOST_OPS = "gpu_wait", "copy", "compile", "launch", "loop", "host_ops"
CUPY, JAX, ORT, NUMBA_CUDA, NUMBA, TRITON, TF, FRAMEWORK = (
    "cupy",
    "jax",
    "onnxruntime",
    "numba.cuda",
    "numba",
    "triton",
    "tensorflow",
    "framework",
)
# a library by its files' paths (the first fragment found), and by the modules its objects come from
PATHS = (
    ("/cupy/", CUPY),
    ("/cupyx/", CUPY),
    ("/cupy_backends/", CUPY),
    ("/jax/", JAX),
    ("/jaxlib/", JAX),
    ("/jax_plugins/", JAX),
    ("/onnxruntime/", ORT),
    ("/numba/cuda/", NUMBA_CUDA),
    ("/numba_cuda/", NUMBA_CUDA),
    ("/numba/", NUMBA),
    ("/triton/", TRITON),
    ("/tensorflow/", TF),
    ("/pytorch_lightning/", FRAMEWORK),
    ("/lightning/pytorch/", FRAMEWORK),
    ("/lightning/fabric/", FRAMEWORK),
    ("/lightning_fabric/", FRAMEWORK),
    ("/transformers/trainer", FRAMEWORK),  # trainer.py, trainer_callback.py, trainer_pt_utils.py, trainer_utils.py
    ("/transformers/integrations/", FRAMEWORK),  # the Trainer's reporting callbacks
    ("/accelerate/", FRAMEWORK),
)
MODULES = (
    ("cupy", CUPY),
    ("cupyx", CUPY),
    ("cupy_backends", CUPY),
    ("jax", JAX),
    ("jaxlib", JAX),
    ("numba.cuda", NUMBA_CUDA),
    ("numba_cuda", NUMBA_CUDA),
    ("numba", NUMBA),
    ("triton", TRITON),
    ("tensorflow", TF),
    ("onnxruntime", ORT),
)
# their compilers: a thread in one of these files compiles (JIT compilation, tracing, lowering)
COMPILERS = (
    "cupy/cuda/compiler.py",
    "cupyx/jit/",
    "jax/_src/compiler.py",
    "jax/_src/compilation_cache.py",
    "jax/_src/interpreters/mlir.py",
    "jax/_src/interpreters/partial_eval.py",
    "numba/core/compiler.py",
    "numba/core/compiler_machinery.py",
    "numba/core/typed_passes.py",
    "numba/core/untyped_passes.py",
    "numba/cuda/compiler.py",
    "tensorflow/python/eager/polymorphic_function/tracing_compilation.py",
    "tensorflow/python/framework/func_graph.py",
    "triton/runtime/autotuner.py",  # benchmarking the configurations of a kernel: tuning, once per shape
)
_READS = ("__array__", "__float__", "__int__", "__bool__", "__index__", "__complex__", "tolist", "item")
_PRINTS = ("__repr__", "__str__", "__format__")  # printing an array reads its values back
WAITS = {  # functions (of a library's frames) and attributes (of a line's call) that wait for the GPU
    CUPY: frozenset(("asnumpy", "get", "synchronize", *_READS, *_PRINTS)),
    JAX: frozenset(("block_until_ready", "_value", "device_get", *_READS, *_PRINTS)),
    NUMBA_CUDA: frozenset(("synchronize", "copy_to_host", *_READS)),
    TRITON: frozenset(("synchronize",)),
    TF: frozenset(("numpy", "_numpy", "_numpy_internal", *_READS, *_PRINTS)),
    ORT: frozenset(("synchronize_inputs", "synchronize_outputs", "copy_outputs_to_cpu", "numpy")),
}
COPIES = {  # ... that copy to the GPU
    CUPY: frozenset(("asarray", "array", "asanyarray", "ascontiguousarray", "set")),
    JAX: frozenset(
        ("device_put", "_device_put_impl", "_batched_device_put_impl", "device_put_sharded", "device_put_replicated")
        + ("copy_to_host_async", "array", "asarray")
    ),
    NUMBA_CUDA: frozenset(("to_device", "copy_to_device")),
    TF: frozenset(("_copy_to_device", "copy_to_device")),
    ORT: frozenset(("ortvalue_from_numpy", "ortvalue_from_numpy_with_onnx_type", "bind_cpu_input", "update_inplace")),
}
ORT_RUNS = frozenset(("run", "run_with_iobinding", "run_with_ort_values", "run_with_ortvaluevector", "run_async"))
ORT_BUILDS = frozenset(("__init__", "_create_inference_session", "_reset_session", "set_providers", "compile_to_file"))
GPU_PROVIDERS = frozenset(
    (
        "CUDAExecutionProvider",
        "TensorrtExecutionProvider",
        "NvTensorRTRTXExecutionProvider",
        "ROCMExecutionProvider",
        "MIGraphXExecutionProvider",
        "DmlExecutionProvider",
        "WebGpuExecutionProvider",
    )
)
GPU_PLATFORMS = frozenset(("cuda", "rocm", "gpu"))
_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)*)")
_STRING = re.compile(r"(?:[rbfuRBFU]{0,2})(?:'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\")")
_ATTRIBUTE = re.compile(r"\.\s*([A-Za-z_]\w*)")
_IMPORT = re.compile(r"^\s*import\s+([\w.]+)(?:\s+as\s+(\w+))?|^\s*from\s+([\w.]+)\s+import\s+(.+)$", re.M)
_KEYWORDS = frozenset(keyword.kwlist)
_MISSING = object()


# the GPU libraries and training frameworks a report names the workload by: the module, the name said
IMPORTED = (
    ("torch", "torch"),
    ("cupy", "cupy"),
    ("jax", "jax"),
    ("onnxruntime", "onnxruntime"),
    ("tensorflow", "tensorflow"),
    ("numba", "numba"),
    ("triton", "triton"),
    ("pytorch_lightning", "lightning"),
    ("lightning", "lightning"),
    ("transformers", "transformers"),
    ("accelerate", "accelerate"),
)


def imported() -> dict[str, str]:
    """The GPU libraries and training frameworks this process imported, with the version each says (its
    `__version__`, read, nothing called)."""
    out: dict[str, str] = {}
    for module, name in IMPORTED:
        m = sys.modules.get(module)
        if m is not None and name not in out:
            version = getattr(m, "__version__", "")
            out[name] = version if isinstance(version, str) else str(version)
    return out


def in_package(path: str) -> str:
    """The part of a ("/"-separated) path that names its package: from the "/" before it in an installed file (a venv
    in `/opt/torch/` is not torch); the whole path for any other file."""
    _, sep, tail = path.rpartition("-packages/")
    return "/" + tail if sep else path


def library_of(path: str) -> Optional[str]:
    """The library (or training framework) a file belongs to, by its path ("/"-separated); None for any other."""
    p = in_package(path)
    return next((lib for fragment, lib in PATHS if fragment in p), None)


def library_of_module(module: str) -> Optional[str]:
    """The GPU library a module belongs to (`cupy._core.core`: CuPy), None for any other."""
    return next((lib for name, lib in MODULES if module == name or module.startswith(name + ".")), None)


class OnGpu:
    """Which libraries compute on the GPU, read from what the process loaded (`refresh`); `assume`: a fixed answer
    for every library (py-spy's stacks, of a process known to hold a GPU; tests)."""

    def __init__(self, assume: Optional[bool] = None) -> None:
        self.assume = assume
        self.state: dict[str, bool] = {}

    def refresh(self) -> bool:
        """Read again which libraries compute on the GPU; whether that changed."""
        if self.assume is not None:
            return False
        mods = sys.modules
        before = self.state
        self.state = {
            CUPY: _loaded("cupy"),  # CuPy's arrays live on the GPU
            JAX: _jax_on_gpu(mods.get("jax._src.xla_bridge")),
            NUMBA_CUDA: _loaded("numba.cuda") and not _numba_simulated(mods.get("numba.cuda")),
            TRITON: _loaded("triton"),
            TF: _tf_on_gpu(mods.get("tensorflow.python.eager.context")),
        }
        return any(v != before.get(k, False) for k, v in self.state.items())

    def on(self, lib: str) -> bool:
        return self.assume if self.assume is not None else self.state.get(lib, False)

    def any(self) -> bool:
        return bool(self.assume) if self.assume is not None else any(self.state.values())


def _loaded(name: str) -> bool:
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _jax_on_gpu(bridge: Any) -> bool:
    """JAX initialized a GPU backend (its platforms by name: no call into it)."""
    backends = getattr(bridge, "_backends", None)
    return isinstance(backends, dict) and not GPU_PLATFORMS.isdisjoint(str(k).lower() for k in list(backends))


def _numba_simulated(cuda: Any) -> bool:
    config = sys.modules.get("numba.core.config")
    return bool(getattr(config, "ENABLE_CUDASIM", False))


def _tf_on_gpu(context_module: Any) -> bool:
    """TensorFlow's eager context lists a GPU among its devices."""
    context = getattr(context_module, "_context", None)
    devices = getattr(context, "_context_devices", None) or ()
    return any("GPU" in str(d) for d in list(devices))


def library_category(lib: str, frames: list[Any], on_gpu: OnGpu) -> Optional[str]:
    """What a thread does in `lib`'s code (`frames`: its frames, innermost first); None: nothing it can tell."""
    names = [f.f_code.co_name for f in frames]
    if lib == ORT:
        return _ort_category(frames, names)
    if lib == FRAMEWORK:
        return LOOP
    waits, copies = WAITS.get(lib, frozenset()), COPIES.get(lib, frozenset())
    gpu = on_gpu.on(lib)
    if any(n in waits for n in names):
        return GPU_WAIT if gpu else HOST_OPS
    if any(n in copies for n in names):
        return COPY if gpu else HOST_OPS
    return LAUNCH if gpu else HOST_OPS


def _ort_category(frames: list[Any], names: list[str]) -> Optional[str]:
    for f, name in zip(frames, names):
        if name in ORT_RUNS:
            providers = session_providers(f)
            if providers is None:
                return LAUNCH  # py-spy's frames hold no variables: a session run by a process on the GPU
            return LAUNCH if providers and providers[0] in GPU_PROVIDERS else HOST_OPS
        if name in ORT_BUILDS:
            return COMPILE  # building the session: loading, optimizing and partitioning its graph
        if name in WAITS[ORT]:
            return GPU_WAIT
        if name in COPIES[ORT]:
            return COPY
    return None


def session_providers(frame: Any) -> Optional[list[str]]:
    """The execution providers of the ONNX Runtime session a frame of its methods runs (`Session._providers`,
    what the C++ session gave it: the CPU's alone where a GPU provider was asked for and is not there)."""
    try:
        session = frame.f_locals.get("self")
    except Exception:  # a py-spy frame: no variables
        return None
    providers = getattr(session, "_providers", None)
    return [str(p) for p in providers] if isinstance(providers, (list, tuple)) else None


def line_category(frame: Any, text: str, on_gpu: OnGpu) -> Optional[str]:
    """What a line of the workload's code does, where a name it uses belongs to a GPU library (resolved through the
    frame's variables, else through its file's imports): a wait, a copy or a launch, by the attributes it calls;
    None where no name does."""
    names = names_in(text)
    called = set(_ATTRIBUTE.findall(code_of(text)))  # every attribute the line calls: `f(x).block_until_ready()`
    found = []
    for head, _ in names:
        module = _module_of(frame, head)
        lib = library_of_module(module) if module else None
        if lib is not None and lib != ORT:
            found.append((lib, called))
    if not found:
        return None
    gpu = any(on_gpu.on(lib) for lib, _ in found)
    if any(not WAITS.get(lib, frozenset()).isdisjoint(attrs) for lib, attrs in found):
        return GPU_WAIT if gpu else HOST_OPS
    if any(not COPIES.get(lib, frozenset()).isdisjoint(attrs) for lib, attrs in found):
        return COPY if gpu else HOST_OPS
    return LAUNCH if gpu else HOST_OPS


def names_in(text: str) -> list[tuple[str, list[str]]]:
    """The dotted names of a line of code (strings and comments left out): each as its first name and the
    attributes after it."""
    out = []
    for m in _NAME.finditer(code_of(text)):
        head = m.group(1)
        if head not in _KEYWORDS:
            out.append((head, [a.strip() for a in m.group(2).split(".") if a.strip()]))
    return out


def code_of(text: str) -> str:
    """A line of code without its strings and comment."""
    return _STRING.sub("''", text).split("#", 1)[0]


def _module_of(frame: Any, name: str) -> Optional[str]:
    """The module that defines what `name` is in `frame`: a module's own name, a function's or class's module, an
    object's type's module; for a frame without variables (py-spy's), the module its file imports under that name."""
    scope = getattr(frame, "f_globals", None)
    if scope is None:
        return imports_of(frame.f_code.co_filename).get(name)
    obj: Any = _MISSING
    try:
        local = frame.f_locals  # the frame's variables (a snapshot before Python 3.13, a view after)
        obj = local.get(name, _MISSING) if hasattr(local, "get") else _MISSING
    except Exception:
        obj = _MISSING
    if obj is _MISSING:
        obj = scope.get(name, _MISSING)
    if obj is _MISSING:
        obj = getattr(builtins, name, _MISSING)
    if obj is _MISSING:
        return None
    kind = type(obj)
    if issubclass(kind, types.ModuleType):
        return str(getattr(obj, "__name__", "") or "")
    if issubclass(kind, (type, types.FunctionType, types.BuiltinFunctionType)):
        return str(getattr(obj, "__module__", "") or "")
    return str(getattr(kind, "__module__", "") or "")


_IMPORTS: dict[str, dict[str, str]] = {}


def imports_of(path: str) -> dict[str, str]:
    """The names a file's imports bind, to the module each comes from (`import cupy as cp`: cp -> cupy; `from jax
    import numpy as jnp`: jnp -> jax.numpy), read once per file."""
    got = _IMPORTS.get(path)
    if got is not None:
        return got
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            source = fh.read(1 << 20)
    except OSError:
        source = ""
    for m in _IMPORT.finditer(source):
        if m.group(1):
            out[m.group(2) or m.group(1).split(".")[0]] = m.group(1) if m.group(2) else m.group(1).split(".")[0]
            continue
        for part in m.group(4).strip("()\\ ").split(","):
            bits = part.split()
            if bits and bits[0].isidentifier():
                out[bits[-1] if len(bits) == 3 and bits[1] == "as" else bits[0]] = f"{m.group(3)}.{bits[0]}"
    if len(_IMPORTS) < 4096:
        _IMPORTS[path] = out
    return out


class Reader:
    """What the stack sampler's classifier asks of this module, with what it learned kept: the library of a file,
    the category of a workload line by the names it calls (resolved once per line, again after a library takes the
    GPU: `refresh`), and of a library's frames."""

    def __init__(self, on_gpu: Optional[OnGpu] = None) -> None:
        self.on_gpu = on_gpu if on_gpu is not None else OnGpu()
        self.paths: dict[str, Optional[str]] = {}
        self.lines: dict[tuple[str, int], Optional[str]] = {}

    def refresh(self) -> None:
        if self.on_gpu.refresh():
            self.lines.clear()

    def library(self, path: str) -> Optional[str]:
        if path not in self.paths:
            self.paths[path] = library_of(path.replace("\\", "/"))
        return self.paths[path]

    def line(self, frame: Any, text: str) -> Optional[str]:
        key = (frame.f_code.co_filename, frame.f_lineno)
        if key not in self.lines:
            got = line_category(frame, text, self.on_gpu)
            if len(self.lines) >= 65536:
                return got
            self.lines[key] = got
        return self.lines[key]

    def frames(self, frames: list[Any]) -> Optional[str]:
        lib = self.library(frames[0].f_code.co_filename)
        return library_category(lib, frames, self.on_gpu) if lib is not None else None
