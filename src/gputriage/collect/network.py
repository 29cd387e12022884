"""Network: per-interface errors and drops (playbook task 17)."""

from __future__ import annotations

from gputriage.backends.procfs import parse_net_dev
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def collect(ctx: Context) -> list[Fact]:
    text = ctx.host.read_text("/proc/net/dev")
    value = text if isinstance(text, Unavailable) else {k: v for k, v in parse_net_dev(text).items() if k != "lo"}
    return [fact("host.net.interfaces", value, "proc:/proc/net/dev")]
