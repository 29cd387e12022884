"""Baselines and diffs: a run's figures, their median and spread over several runs, and whether a
change between two is outside the measured noise.

Figures of a run: the throughput it reported (steps, samples, tokens per second; `run --metric`'s
median), the lead GPU's steady medians (GPU-Util, SM activity, tensor pipes, DRAM, power, SM clock),
the useful share of its GPU time, its duration. A change is called when the medians differ by more
than the noise: the larger half-spread ((high − low) / 2) of the sides that have several runs,
relative to A's median, and never under 1% (three runs agreeing to 0.01% do not make a 0.2% change
real); with a single run on each side the noise is unknown, and nothing is called. A regression is a
called change the wrong way on a figure with a direction (throughput, SM activity, tensor pipes,
useful share: higher is better). The environment's fingerprint sits beside: GPU model and count,
driver, CUDA driver, torch, maximum SM clock, ECC, power limit, PCIe link, the environment variables
that change a GPU job, the command.
"""

from __future__ import annotations

from collections import Counter

from gputriage.model.baseline import Baseline, Change, Diff, EnvChange, Figure
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording, triage_order
from gputriage.model.numbers import median
from gputriage.model.run import RunReport

MIN_NOISE = Threshold(
    "baseline_min_noise_share",
    0.01,
    "of A's median",
    "the smallest noise a change between two baselines must exceed to be called, whatever the runs' spread",
    "judgement: three runs that agree to 0.01% do not make a 0.2% change real; a rerun of the same job moves by more",
)

HIGHER_IS_BETTER = {
    "steps_per_s",
    "samples_per_s",
    "tokens_per_s",
    "metric",
    "sm_active_pct",
    "tensor_active_pct",
    "useful_pct",
    "mfu_pct",
}
GPU_FIGURES = ("util_pct", "sm_active_pct", "tensor_active_pct", "dram_active_pct", "power_w", "sm_clock_mhz")


def figures(r: RunReport) -> dict[str, float]:
    """The figures a baseline keeps of one run."""
    out: dict[str, float] = {}
    t = r.throughput
    if t is not None:
        for key in ("steps_per_s", "samples_per_s", "tokens_per_s", "mfu_pct"):
            v = getattr(t, key)
            if v is not None:
                out[key] = float(v)
        if t.metric_median is not None:
            out["metric"] = float(t.metric_median)
    lead = next(iter(r.verdict.per_gpu.values()), None)
    if lead is not None:
        for key in GPU_FIGURES:
            v = lead.evidence.get(key)
            if isinstance(v, (int, float)):
                out[key] = float(v)
    if r.cost is not None:
        out["useful_pct"] = r.cost.useful_pct
    if r.started_s is not None and r.ended_s is not None:
        out["duration_s"] = round(r.ended_s - r.started_s, 2)
    return out


def fingerprint(r: RunReport) -> dict[str, str]:
    """What the run's environment was, as text per key (compared as such)."""
    m = r.meta
    gpus = list(m.gpus.values())
    out = {
        "gpus": f"{len(gpus)} x {', '.join(sorted({g.name or '?' for g in gpus}))}" if gpus else "none",
        "command": " ".join(r.command),
    }
    for key in ("driver", "cuda_driver", "torch"):
        if key in m.system:
            out[key] = str(m.system[key])
    clocks = sorted({g.sm_max_mhz for g in gpus if g.sm_max_mhz})
    if clocks:
        out["sm_clock_max_mhz"] = ", ".join(str(x) for x in clocks)
    ecc = sorted({"on" if g.ecc else "off" for g in gpus if g.ecc is not None})
    if ecc:
        out["ecc"] = ", ".join(ecc)
    limits = sorted({g.power_limit_mw for g in gpus if g.power_limit_mw})
    if limits:
        out["power_limit_w"] = ", ".join(f"{x / 1000:.0f}" for x in limits)
    links = sorted({f"gen{g.pcie_gen_max} x{g.pcie_width_max}" for g in gpus if g.pcie_gen_max})
    if links:
        out["pcie_link_max"] = ", ".join(links)
    for k, v in m.env.items():
        out[f"env {k}"] = v
    out["gputriage"] = m.gputriage
    return out


def baseline(name: str, reports: list[RunReport], created_s: float) -> Baseline:
    """Median and spread of each figure over the runs; the verdicts they gave; the first run's environment
    (a baseline of runs in different environments says so: each differing key lists every value)."""
    per: dict[str, list[float]] = {}
    for r in reports:
        for k, v in figures(r).items():
            per.setdefault(k, []).append(v)
    prints = [fingerprint(r) for r in reports]
    keys = sorted({k for p in prints for k in p})
    env = {k: " | ".join(dict.fromkeys(p.get(k, "?") for p in prints)) for k in keys}
    verdicts = Counter(r.verdict.bottleneck.value for r in reports if r.verdict.bottleneck is not None)
    return Baseline(
        name=name,
        created_s=created_s,
        runs=[r.id for r in reports if r.id is not None],
        figures={
            k: Figure(median=round(float(median(v)), 4), low=min(v), high=max(v), runs=len(v)) for k, v in per.items()
        },
        verdicts=dict(verdicts),
        fingerprint=env,
    )


def diff(a: Baseline, b: Baseline, a_label: str, b_label: str) -> Diff:
    out = Diff(
        a=a_label,
        b=b_label,
        verdict_a=max(a.verdicts, key=lambda k: a.verdicts[k]) if a.verdicts else None,
        verdict_b=max(b.verdicts, key=lambda k: b.verdicts[k]) if b.verdicts else None,
    )
    for key in sorted(set(a.figures) | set(b.figures)):
        fa, fb = a.figures.get(key), b.figures.get(key)
        c = Change(figure=key, a=fa, b=fb)
        if fa is not None and fb is not None and fa.median:
            c.change_pct = round(100 * (fb.median - fa.median) / abs(fa.median), 1)
            spreads = [f.high - f.low for f in (fa, fb) if f.runs > 1]
            if spreads:
                noise = max(max(spreads) / 2, MIN_NOISE.value * abs(fa.median))
                c.noise_pct = round(100 * noise / abs(fa.median), 1)
                c.called = abs(fb.median - fa.median) > noise
            if key in HIGHER_IS_BETTER:
                c.better = fb.median > fa.median
                if c.called and not c.better:
                    out.regressions.append(key)
        out.changes.append(c)
    for key in sorted(set(a.fingerprint) & set(b.fingerprint)):  # a key one side never recorded is unknown there
        if a.fingerprint.get(key) != b.fingerprint.get(key):
            out.environment.append(EnvChange(key=key, a=a.fingerprint.get(key), b=b.fingerprint.get(key)))
    return out


CAUSE = (
    "A figure with a direction (throughput, SM activity, tensor pipes, the useful share of GPU time) moved the wrong "
    "way by more than the baseline's measured noise"
)
REGRESSION = FindingSpec(
    id="run.regression",
    step=1,
    severity=Severity.warn,
    commands=("run",),
    needs=("baseline",),
    symptom="The run fell below its baseline",
    cause=CAUSE,
    decision="Look first at what changed in the environment (listed beside: driver, power limit, PCIe link, "
    "variables, command); then compare the verdicts: a new bottleneck names the cause",
    condition="a figure's median outside the half-spread of the baseline's runs (and {baseline_min_noise_share:.0%} "
    "of its median at least), the wrong way (with a baseline of one run the noise is unknown: nothing is called)",
    thresholds=(MIN_NOISE,),
    says={
        "changed": Wording(symptom="Below {baseline}: {figures}", cause=CAUSE + ". What changed: {changed}"),
        "unchanged": Wording(
            symptom="Below {baseline}: {figures}",
            cause=CAUSE + ". Nothing recorded in the environment changed (GPUs, driver, CUDA, torch, clocks, ECC, "
            "power limit, PCIe link, variables, command)",
        ),
    },
)
SPECS = (REGRESSION,)


def regression(d: Diff) -> Finding | None:
    """The finding a run --baseline raises when figures moved the wrong way beyond the noise."""
    if not d.regressions:
        return None
    moved = {c.figure: c for c in d.changes}
    parts = [f"{k} {moved[k].change_pct:+.1f}% (noise {moved[k].noise_pct:.1f}%)" for k in d.regressions]
    changed = "; ".join(f"{e.key}: {e.a} -> {e.b}" for e in d.environment)
    return REGRESSION.finding(
        {
            "baseline": d.a,
            "regressions": {k: moved[k].change_pct for k in d.regressions},
            "environment": {e.key: [e.a, e.b] for e in d.environment},
        },
        say="changed" if changed else "unchanged",
        fill={"baseline": d.a, "figures": ", ".join(parts), "changed": changed},  # d.a: "baseline NAME" or "run ID"
    )


def against(report: RunReport, base: Baseline, label: str) -> None:
    """`run --baseline`: this run against the baseline (`label`: how to call it), in the report, and the
    regression finding when it fell below."""
    d = diff(base, baseline("this run", [report], 0.0), label, "this run")
    report.baseline = d
    f = regression(d)
    if f is not None:
        report.findings = triage_order([*report.findings, f])
