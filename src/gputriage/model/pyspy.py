"""Where the Python processes holding a GPU spent their time, from py-spy (`watch`: processes gputriage did not
start), or why it could not be read."""

from __future__ import annotations

import msgspec

from gputriage.model.run import HostLine


class PySpyStacks(msgspec.Struct, kw_only=True, omit_defaults=True):
    """py-spy's dumps of the processes on the GPUs, classified as the stack sampler classifies its samples."""

    available: bool  # py-spy ran (False: `why` says why not: not installed, not permitted)
    why: str = ""
    every_s: float = 10.0  # one dump per process this often
    dumps: int = 0  # dumps that gave stacks
    processes: list[int] = []  # the processes dumped
    failed: dict[str, str] = {}  # pid -> why its last dump failed
    main_shares: dict[str, float] = {}  # the main threads' dumps per category (`inworkload.stack_categories`)
    lines: list[HostLine] = []  # the top lines, most dumps first
