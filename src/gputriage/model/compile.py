"""What `torch.compile` did in a workload: functions compiled and recompiled (and the guard that failed), graph breaks
by reason and by place, the functions dynamo gave up on, and the seconds spent compiling (reported from inside the
workload by `inworkload.dynamo_counters`)."""

from __future__ import annotations

from typing import Optional

import msgspec


class BreakReason(msgspec.Struct, kw_only=True):
    reason: str  # dynamo's own words, first line
    count: int


class BreakSite(msgspec.Struct, kw_only=True, omit_defaults=True):
    function: str  # the function the graph was split in
    line: int  # the line of the break (the compiled code resumes after it)
    count: int
    file: str = ""
    in_loop: bool = False  # a break inside a loop: dynamo gave up on the whole function, it runs eagerly


class CompiledFunction(msgspec.Struct, kw_only=True, omit_defaults=True):
    function: str
    file: str = ""
    line: int = 0  # where it starts; with after_break, the line of the graph break it resumes after
    after_break: bool = False  # the rest of `function` after a graph break (a resume function dynamo made)
    compilations: int = 0  # compilations that produced code, recompilations included (0: not counted)
    recompiles: int = 0
    compile_s: Optional[float] = None  # its forward and backward graphs
    recompile_reason: str = ""  # dynamo's words for the last guard that failed ("tensor 'x' size mismatch ...")
    fallback: str = ""  # why dynamo gave up on it (the recompile limit, a graph break inside a loop): runs eagerly


class CompileStats(msgspec.Struct, kw_only=True, omit_defaults=True):
    frames_compiled: int = 0  # compilations, recompilations included
    graph_breaks: int = 0  # breaks met while compiling (each compilation of a function meets its breaks again)
    loop_breaks: Optional[int] = None  # of them, inside a loop: no split, the frame runs eagerly (None: not counted)
    unique_graphs: int = 0
    recompiles: Optional[int] = None  # compilations beyond the first of each function (None: not counted)
    compile_s: Optional[float] = None  # seconds dynamo and inductor spent compiling
    break_reasons: list[BreakReason] = []
    break_sites: list[BreakSite] = []
    compiled_functions: list[CompiledFunction] = []
