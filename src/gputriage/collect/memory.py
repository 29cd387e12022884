"""Memory and swap: available, swap used, PSI memory, major page-fault and swap-in rates (task 9)."""

from __future__ import annotations

from typing import Any

from gputriage.backends.procfs import parse_keyed, parse_psi
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def begin(ctx: Context) -> Any:
    text = ctx.host.read_text("/proc/vmstat")
    return text if isinstance(text, Unavailable) else parse_keyed(text)


def end(ctx: Context, first: Any, window_s: float) -> list[Fact]:
    second = begin(ctx)
    src = "proc:/proc/vmstat"
    if isinstance(first, Unavailable) or isinstance(second, Unavailable) or window_s <= 0:
        why = first if isinstance(first, Unavailable) else second
        why = why if isinstance(why, Unavailable) else Unavailable("error", "no window")
        return [fact("host.vm.major_faults_per_s", why, src), fact("host.vm.swap_in_pages_per_s", why, src)]
    rate = lambda key: round((second.get(key, 0) - first.get(key, 0)) / window_s, 1)
    return [
        fact("host.vm.major_faults_per_s", rate("pgmajfault"), src),
        fact("host.vm.swap_in_pages_per_s", rate("pswpin"), src),
    ]


def collect(ctx: Context) -> list[Fact]:
    src = "proc:/proc/meminfo"
    text = ctx.host.read_text("/proc/meminfo")
    names = {
        "MemTotal": "host.mem.total_bytes",
        "MemAvailable": "host.mem.available_bytes",
        "SwapTotal": "host.swap.total_bytes",
    }
    facts: list[Fact] = []
    if isinstance(text, Unavailable):
        facts += [fact(n, text, src) for n in (*names.values(), "host.swap.used_bytes")]
    else:
        kb = parse_keyed(text)
        facts += [fact(n, kb[k] * 1024 if k in kb else Unavailable("not_found", k), src) for k, n in names.items()]
        if "SwapTotal" in kb and "SwapFree" in kb:
            facts.append(fact("host.swap.used_bytes", (kb["SwapTotal"] - kb["SwapFree"]) * 1024, src))
    psi = ctx.host.read_text("/proc/pressure/memory")
    facts.append(
        fact(
            "host.psi.memory.some_avg10_pct",
            psi if isinstance(psi, Unavailable) else parse_psi(psi).get("some_avg10", 0.0),
            "proc:/proc/pressure/memory",
        )
    )
    return facts
