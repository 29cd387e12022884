"""A baseline: what a workload achieved over one or more runs (each figure's median and spread), and
the environment it ran in; a diff: two of them side by side."""

from __future__ import annotations

from typing import Optional

import msgspec

BASELINE_SCHEMA = "gputriage.baseline"
BASELINE_VERSION = 1
DIFF_SCHEMA = "gputriage.diff"
DIFF_VERSION = 1


class Figure(msgspec.Struct, kw_only=True):
    """One figure over the runs: median, lowest, highest, and how many runs had it."""

    median: float
    low: float
    high: float
    runs: int


class Baseline(msgspec.Struct, kw_only=True, omit_defaults=True):
    schema: str = BASELINE_SCHEMA
    version: int = BASELINE_VERSION
    name: str = ""
    created_s: float = 0.0
    runs: list[int] = []  # the store's run ids
    figures: dict[str, Figure] = {}  # "samples_per_s", "sm_active_pct", "useful_pct", ...
    verdicts: dict[str, int] = {}  # bottleneck -> runs that gave it
    fingerprint: dict[str, str] = {}  # GPU model and count, driver, CUDA, power limit, PCIe link, env, command


class Change(msgspec.Struct, kw_only=True, omit_defaults=True):
    figure: str
    a: Optional[Figure] = None
    b: Optional[Figure] = None
    change_pct: Optional[float] = None  # b's median against a's
    noise_pct: Optional[float] = None  # the larger half-spread of the two, against a's median (None: one run)
    called: Optional[bool] = None  # outside the noise; None: the noise is unknown (a single run on a side)
    better: Optional[bool] = None  # for figures with a direction (throughput, SM activity: higher is better)


class EnvChange(msgspec.Struct, kw_only=True):
    key: str
    a: Optional[str] = None
    b: Optional[str] = None


class Diff(msgspec.Struct, kw_only=True, omit_defaults=True):
    schema: str = DIFF_SCHEMA
    version: int = DIFF_VERSION
    a: str = ""  # what was compared: "run 12", "baseline nightly"
    b: str = ""
    changes: list[Change] = []
    verdict_a: Optional[str] = None
    verdict_b: Optional[str] = None
    environment: list[EnvChange] = []  # what differs in the environment: the first question after "it got slower"
    regressions: list[str] = []  # figures called worse, outside the noise
