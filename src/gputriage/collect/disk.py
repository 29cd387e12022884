"""`check --full`: the quick disk-read probes on the working directory's filesystem (seed tasks 7-8)."""

from __future__ import annotations

from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable
from gputriage.probes import disk

QUICK_BYTES = 64 << 20
QUICK_SECONDS = 0.75


def collect(ctx: Context) -> list[Fact]:
    src = "probe:disk"
    try:
        results = {r.name: r for r in disk.probe(ctx.host.cwd, size_bytes=QUICK_BYTES, seconds=QUICK_SECONDS)}
    except (ValueError, OSError) as exc:
        why = Unavailable("error", str(exc))
        return [fact("host.fs.cwd.seq_read_mbps", why, src), fact("host.fs.cwd.rand_read_4k_iops", why, src)]
    seq, rnd = results["disk.seq_read"], results["disk.rand_read_4k"]
    return [fact("host.fs.cwd.seq_read_mbps", seq.value, f"{src}:{seq.detail.get('tool')}"),
            fact("host.fs.cwd.rand_read_4k_iops", rnd.value, f"{src}:{rnd.detail.get('tool')}"),
            fact("host.fs.cwd.read_probe", {"cache": seq.detail.get("cache"), "queue_depth":
                                            rnd.detail.get("queue_depth"), "file_bytes": QUICK_BYTES}, src)]
