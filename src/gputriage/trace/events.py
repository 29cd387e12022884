"""Kineto's events as msgspec decodes them: typed records of only the fields the analyses read.

Kineto writes "ph" (the event's phase) first; a chunk is decoded as a union keyed on it, so the flow arrows that
link launches to kernels (two of every five events) come out as their category alone. A chunk holding a phase
Kineto does not write is decoded as generic `Event`s.
"""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar, Literal, Optional, Union

import msgspec

# gpu event kinds
KERNEL, MEMCPY, MEMSET = 0, 1, 2
GPU_CATS = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "gpu_memset": MEMSET}
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "driver"})
# how Kineto marks torch.compile'd code on the host: the region dynamo entered (a cpu_op in recent versions), the
# autograd function around the compiled graph, the call into the compiled graph itself
COMPILED_ANNOTATIONS = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph", "torch_compile")
# how the profiler marks a DataLoader handing out a batch on the host (torch's `_BaseDataLoaderIter.__next__`):
# the main thread fetching, collating, or waiting for its workers
LOADER_ANNOTATIONS = ("enumerate(DataLoader)#",)


# Events are not tracked by the cyclic garbage collector (gc=False: decoded from JSON, they cannot hold a cycle):
# hundreds of thousands of them would otherwise set off collections that walk them all, a fifth of the decode
class Args(msgspec.Struct, gc=False):
    """The arguments read, each absent one at a value that says so (-1, 0): a column takes them as they come; a
    null (which Kineto does not write) reads as None and is mended where the column is filled."""

    external_id: Optional[int] = msgspec.field(default=-1, name="External id")
    correlation: Optional[int] = -1
    device: Optional[int] = -1
    flops: Optional[float] = 0.0
    blocks_per_sm: Optional[float] = msgspec.field(default=-1.0, name="blocks per SM")
    dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Optional[Args] = None


# The same events as a union keyed on their phase (module doc)
# Kineto's categories of complete events (libkineto's ActivityType names, and its trace span): decoded as these very
# strings, a category costs no allocation and compares by identity
KinetoCategory = Literal[
    "",
    "cpu_op",
    "user_annotation",
    "gpu_user_annotation",
    "gpu_memcpy",
    "gpu_memset",
    "kernel",
    "external_correlation",
    "cuda_runtime",
    "cuda_driver",
    "cpu_instant_event",
    "python_function",
    "overhead",
    "mtia_runtime",
    "mtia_ccp_events",
    "mtia_insight",
    "cuda_sync",
    "cuda_event",
    "mtia_counters",
    "glow_runtime",
    "cuda_profiler_range",
    "hpu_op",
    "xpu_runtime",
    "xpu_driver",
    "collective_comm",
    "privateuse1_runtime",
    "privateuse1_driver",
    "xpu_scope_profiler",
    "xpu_sync",
    "Trace",
]


class Complete(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    ph: ClassVar[str] = "X"
    cat: KinetoCategory = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Optional[Args] = None


class CompleteOther(Complete, tag="X"):
    """A complete event of a category Kineto did not write when this was (or a flow arrow's, below): the chunk is
    decoded with these."""

    cat: str = ""  # type: ignore[assignment]


# Kineto's flow categories (libkineto's links: forward to backward, launch to GPU activity): decoded as these very
# strings, the flow arrows (two of every five events) cost no allocation for their category
FlowCategory = Literal["", "ac2g", "fwdbwd"]


class FlowStart(msgspec.Struct, tag_field="ph", tag="s", gc=False):
    ph: ClassVar[str] = "s"
    cat: FlowCategory = ""


class FlowEnd(msgspec.Struct, tag_field="ph", tag="f", gc=False):
    ph: ClassVar[str] = "f"
    cat: FlowCategory = ""


class FlowStartOther(FlowStart, tag="s"):
    cat: str = ""  # type: ignore[assignment]


class FlowEndOther(FlowEnd, tag="f"):
    cat: str = ""  # type: ignore[assignment]


class Metadata(msgspec.Struct, tag_field="ph", tag="M", gc=False):
    ph: ClassVar[str] = "M"
    cat: ClassVar[str] = ""


class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    ph: ClassVar[str] = "i"
    cat: str = ""


class Header(msgspec.Struct):
    schemaVersion: Optional[int] = None
    deviceProperties: list[dict[str, Any]] = []
    distributedInfo: Optional[dict[str, Any]] = None
    baseTimeNanoseconds: Optional[int] = None
    cuda_runtime_version: Optional[int] = None


class WholeTrace(Header):
    traceEvents: list[Event] = []


_kineto_list = msgspec.json.Decoder(list[Union[Complete, FlowStart, FlowEnd, Metadata, Instant]])
_header = msgspec.json.Decoder(Header)


# The decoders of a file not in Kineto's own form, made where one is met: resolving their types would cost every
# read's start a millisecond and more
@cache
def kineto_other() -> msgspec.json.Decoder[list[Any]]:
    return msgspec.json.Decoder(list[Union[CompleteOther, FlowStartOther, FlowEndOther, Metadata, Instant]])


@cache
def generic_events() -> msgspec.json.Decoder[list[Event]]:
    return msgspec.json.Decoder(list[Event])


@cache
def whole_trace() -> msgspec.json.Decoder[WholeTrace]:
    return msgspec.json.Decoder(WholeTrace)


_raw_list = msgspec.json.Decoder(list[Any])
