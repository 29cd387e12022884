"""A distributed job's ranks in the HTML report (`run` of a launcher, `gputriage join`): a row per rank with its
main thread's time split by what it did (waiting in collectives, for input, computing on the host, waiting for a
CPU), its step time, its CPU and cores, its GPU and its score; the straggler; the hangs said while the job ran."""

from __future__ import annotations

from gputriage.model.ranks import RanksReport
from gputriage.report.html_page import Raw, esc, stack, table, when
from gputriage.report.ranks_terminal import SHARES, gpu_text

COLOURS = ("#17a2b8", "#d9822b", "#3b7dd8", "#c0392b")  # collective wait, input, host, waiting for a CPU


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.1f}"


def ranks_html(ranks: RanksReport) -> str:
    """The ranks' table, the straggler and the hangs."""
    s = ranks.straggler
    nodes = len(ranks.nodes) > 1
    head = ["rank", *(["node"] if nodes else []), "main thread's time", "waiting for a CPU", "step ms p50 / p90"]
    head += ["CPU", "cores", "GPU", "score"]
    rows = []
    for r in ranks.per_rank:
        parts = [
            (h, 100 * sum(r.shares.get(c, 0.0) for c in cats), colour) for (h, cats), colour in zip(SHARES, COLOURS)
        ]
        rank = f"<b>{r.rank}</b> (straggler)" if s is not None and r.rank == s.rank else str(r.rank)
        runq = r.shares.get("runq")
        rows.append(
            [
                Raw(rank),
                *([r.node] if nodes else []),
                Raw(stack(parts[:-1])),  # waiting for a CPU overlaps the others: a column of its own
                f"{runq:.0%}" if runq is not None else "-",
                f"{_ms(r.median_step_us)} / {_ms(r.p90_step_us)}",
                f"{r.cpu_pct:.0f}%" if r.cpu_pct is not None else "-",
                r.cores or "all",
                gpu_text(r.gpu),
                f"{r.score:.2f}" if r.score is not None else "-",
            ]
        )
    numeric = [i for i, h in enumerate(head) if h in ("waiting for a CPU", "step ms p50 / p90", "CPU", "score")]
    out = table(head, rows, numeric=numeric)
    if s is not None:
        kind = (
            f"chronic: slow in {s.slow_windows} of {s.windows} rounds"
            if s.chronic
            else (f"one-off: stalled in {s.slow_windows} of {s.windows} rounds")
        )
        out = (
            f"<p><b>Straggler: rank {s.rank}</b>, {s.score:.2f}x rank {s.best_rank}'s time outside collective waits "
            f"({esc(kind)}); the other ranks wait for it in collectives {s.others_collective_wait_share:.0%} of their "
            "time (the effect, not the links).</p>" + out
        )
    elif len(ranks.per_rank) > 1:
        out = "<p>No straggler: no rank held the others back.</p>" + out
    for h in ranks.hangs:
        missing = ", ".join(map(str, h.missing)) or "none (every rank waited)"
        frames = "".join(f"<li>rank {esc(k)}: <code>{esc(' ← '.join(f[:6]))}</code></li>" for k, f in h.stacks.items())
        out += (
            f"<p><b>Hang</b> at {esc(when(h.t_s))}: ranks {esc(', '.join(map(str, h.waiting)))} waited "
            f"{h.waited_s:.0f} s in a collective; missing: {esc(missing)}.</p><ul>{frames}</ul>"
        )
    score = "score: a rank's time outside collective waits against the best rank's"
    return out + f'<p class="muted">{esc(score)}; shares of each rank\'s main thread (the stack sampler).</p>'
