"""Environment variables that cost performance or hide GPUs."""

from __future__ import annotations

from gputriage.collect.base import Context, fact
from gputriage.model.environment import COSTLY_VARS
from gputriage.model.fact import Fact


def collect(ctx: Context) -> list[Fact]:
    env = ctx.host.environ
    found = {var: env[var] for var in COSTLY_VARS if var in env}
    return [fact("env.costly", found, "env")]
