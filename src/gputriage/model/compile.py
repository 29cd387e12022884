"""What `torch.compile` did in a workload: frames compiled and recompiled, graph breaks by reason and by place, and
the seconds spent compiling (reported from inside the workload by `inworkload.dynamo_counters`)."""

from __future__ import annotations

from typing import Optional

import msgspec


class BreakReason(msgspec.Struct, kw_only=True):
    reason: str  # dynamo's own words, first line
    count: int


class BreakSite(msgspec.Struct, kw_only=True, omit_defaults=True):
    function: str  # the function the graph was split in
    line: int  # the line the compiled code resumes at, after the break
    count: int
    file: str = ""


class CompiledFunction(msgspec.Struct, kw_only=True, omit_defaults=True):
    function: str
    file: str = ""
    line: int = 0


class CompileStats(msgspec.Struct, kw_only=True, omit_defaults=True):
    frames_compiled: int = 0  # compilations, recompilations included
    graph_breaks: int = 0
    unique_graphs: int = 0
    recompiles: Optional[int] = None  # compilations beyond the first of each function (None: not counted)
    compile_s: Optional[float] = None  # seconds dynamo and inductor spent compiling
    break_reasons: list[BreakReason] = []
    break_sites: list[BreakSite] = []
    compiled_functions: list[CompiledFunction] = []
