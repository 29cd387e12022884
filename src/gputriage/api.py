"""The library API: everything the `gputriage` command does, as functions that return typed
reports (msgspec Structs: `msgspec.json.encode(report)` is what `--json` prints).

    import gputriage
    report = gputriage.check()                        # CheckReport: findings in triage order
    report = gputriage.analyze_trace(["trace.json"])  # TraceReport
    report = gputriage.run(["python", "train.py"])    # RunReport: the workload's verdict
    with gputriage.monitor() as m:                    # your own code, sampled
        train()
    print(m.report.verdict.bottleneck)

Nothing here prints; errors the caller can act on are raised as `GputriageError` subclasses.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from gputriage.model.bench import BenchReport
from gputriage.model.catalog import Catalog
from gputriage.model.check import CheckReport, check_report
from gputriage.model.finding import triage_order
from gputriage.model.run import ProfileReport, RunReport
from gputriage.model.snapshot import Snapshot
from gputriage.model.trace import TraceReport

if TYPE_CHECKING:
    from gputriage.model.sample import Sample
    from gputriage.monitor.session import Session


class GputriageError(Exception):
    """Something the caller gave cannot be used (a file, a store, a command)."""


class WorkloadError(GputriageError):
    """The workload could not be started; `exit_code` is the shell's (127: not found, 126: not runnable)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _store(store: "str | Path | None | bool", readonly: bool = False):  # noqa: ANN202 - Store | None
    """`store`: a path, None for the default store, False for none."""
    if store is False:
        return None
    from gputriage.monitor.store import Store, StoreError

    try:
        return Store(None if store is None or store is True else store, readonly=readonly)
    except StoreError as exc:
        raise GputriageError(str(exc)) from None


def _budget(budget: "str | Path | None"):  # noqa: ANN202 - Budget | None
    if budget is None:
        return None
    from gputriage.diagnosis.budget import BudgetError, load_budget

    try:
        return load_budget(budget)
    except BudgetError as exc:
        raise GputriageError(str(exc)) from None


def snapshot(*, window_s: float = 0.5, load: bool = True, framework: bool = True, refresh: bool = False,
             full: bool = False) -> Snapshot:
    """Every fact `check` reads on this machine (no GPU, driver or torch needed)."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.collect import DEFAULT_LOAD_MS, collect_snapshot

    nvml, host = PynvmlBackend(), Host()
    try:
        snap = collect_snapshot(nvml, host, window_s=window_s, load_ms=DEFAULT_LOAD_MS if load else 0.0,
                                use_framework=framework, use_cache=not refresh)
    finally:
        nvml.shutdown()
    if full:
        from gputriage.probes.disk import check_facts

        snap = snapshot_with(snap, check_facts(host.cwd))
    return snap


def snapshot_with(snap: Snapshot, facts: list) -> Snapshot:  # noqa: ANN001
    return Snapshot(facts=snap.facts + tuple(facts), taken_at=snap.taken_at, hostname=snap.hostname,
                    tool_version=snap.tool_version, raw=snap.raw)


def check(source: "Snapshot | str | Path | None" = None, *, budget: "str | Path | None" = None,
          **snapshot_options: object) -> CheckReport:
    """The playbook's findings on this machine, or on a recorded snapshot (a Snapshot or its file)."""
    from gputriage.diagnosis.budget import check_snapshot
    from gputriage.diagnosis.rules import evaluate
    from gputriage.model.snapshot import SnapshotError

    limits = _budget(budget)
    if isinstance(source, (str, Path)):
        try:
            source = Snapshot.load(source)
        except SnapshotError as exc:
            raise GputriageError(str(exc)) from None
    snap = source if source is not None else snapshot(**snapshot_options)  # type: ignore[arg-type]
    findings = evaluate(snap)
    if limits is not None:
        findings = triage_order(findings + check_snapshot(limits, snap))
    return check_report(snap, findings)


def analyze_trace(paths: "Sequence[str | Path] | str | Path") -> TraceReport:
    """Read PyTorch profiler traces (one per rank) and judge them. Files that cannot be read are listed
    in the report's `problems`; GputriageError when none can."""
    from gputriage.diagnosis.trace_judge import judge
    from gputriage.trace.analyze import analyze_file
    from gputriage.trace.load import TraceError

    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    ranks, problems = [], []
    for p in files:
        try:
            ranks.append(analyze_file(p))
        except TraceError as exc:
            problems.append(str(exc))
    if not ranks:
        raise GputriageError("; ".join(problems) or "no trace given")
    return judge([str(p) for p in files], ranks, problems)


def run(command: Sequence[str], *, store: "str | Path | None | bool" = None, budget: "str | Path | None" = None,
        period_s: float | None = None, use_gpm: bool = True, profile: bool = False, profile_steps: int = 10,
        profile_skip_s: float = 2.0, keep_trace: "str | Path | None" = None, die_with_parent: bool = True,
        env: dict[str, str] | None = None) -> RunReport:
    """Run a command (no shell, stdio passed through), sample the GPUs, the host and its process tree,
    and judge it. `profile`: a Python command profiles itself with torch.profiler and the trace's verdict
    is merged. The report's `exit_code` is the command's (128 + N when signal N ended it)."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.backends.workload import Workload
    from gputriage.diagnosis.run_judge import judge
    from gputriage.model.reading import Unavailable
    from gputriage.monitor.session import Session
    from gputriage.monitor.store import StoreError
    from gputriage.trace import inject

    limits = _budget(budget)
    argv, environ = list(command), dict(os.environ if env is None else env)
    folder = None
    if profile:
        try:
            argv, environ, folder = inject.prepare(argv, environ, steps=profile_steps, skip_s=profile_skip_s)
        except ValueError as exc:
            raise GputriageError(str(exc)) from None
    db = _store(store)
    session = Session(PynvmlBackend(record=False, bounded=False), Host(), db, "run", list(command), period_s=period_s,
                      use_gpm=use_gpm)
    try:
        session.open()
    except StoreError as exc:
        session.nvml.shutdown()
        raise GputriageError(f"{exc}; use --no-store (store=False) to run without keeping the run") from None
    workload = Workload.start(argv, environ, die_with_parent=die_with_parent)
    if isinstance(workload, Unavailable):
        session.finish()
        raise WorkloadError(workload.detail, {"not_found": 127, "no_permission": 126}.get(workload.reason, 126))
    session.start(workload.pid)
    code = workload.wait()
    profiled = _profile(folder, keep_trace) if folder is not None else None
    report = judge(session.finish(), code, profile=profiled, budget=limits)
    session.save(report)
    if session.store_error and session.store_error not in report.notes:
        report.notes.append(session.store_error)
    if db is not None:
        db.close()
    return report


def _profile(folder: Path, keep: "str | Path | None") -> ProfileReport:
    from gputriage.trace import inject

    try:
        written = inject.read_back(folder, Path(keep) if keep is not None else None)
        out = ProfileReport(log=written.log, error=written.error, window_s=written.window_s, held_s=written.held_s,
                            kept_trace=str(keep) if keep is not None and written.trace else None)
        if written.trace is not None:
            try:
                out.trace = analyze_trace([written.trace])
            except GputriageError as exc:
                out.error = str(exc)
        return out
    finally:
        inject.clean(folder)


class Monitor:
    """`with gputriage.monitor() as m:` samples the GPUs, the host and this process around a block of
    the caller's code; after the block, `m.report` holds its verdict and findings. `live()` gives the
    latest sample and each GPU's label over the last second while it runs."""

    def __init__(self, *, store: "str | Path | None | bool" = False, budget: "str | Path | None" = None,
                 period_s: float | None = None, use_gpm: bool = True, kind: str = "monitor",
                 pid: int | None = -1) -> None:
        self._store, self._budget, self._period_s, self._use_gpm = store, _budget(budget), period_s, use_gpm
        self.kind = kind
        self.pid = os.getpid() if pid == -1 else pid  # None: no process tree (a watch of the machine)
        self.report: RunReport | None = None
        self.session: "Session | None" = None
        self._db = None

    def __enter__(self) -> "Monitor":
        from gputriage.backends.host import Host
        from gputriage.backends.nvml import PynvmlBackend
        from gputriage.monitor.session import Session
        from gputriage.monitor.store import StoreError

        self._db = _store(self._store)
        self.session = s = Session(PynvmlBackend(record=False, bounded=False), Host(), self._db, self.kind,
                                   [self.kind], period_s=self._period_s, use_gpm=self._use_gpm)
        try:
            s.open()
        except StoreError as exc:
            s.finish()
            raise GputriageError(f"{exc}; use --no-store (store=False) to go without keeping it") from None
        s.start(self.pid)
        return self

    def live(self) -> "tuple[Sample, dict[int, str]] | None":
        """The latest sample, and each GPU's bottleneck over the last second (None before any sample)."""
        from gputriage.diagnosis.classify import label
        from gputriage.model.run import GpuStatic
        from gputriage.monitor.windows import metrics_of

        assert self.session is not None
        recent = list(self.session.sampler.recent)
        if not recent:
            return None
        last = [x for x in recent if x.t_s >= recent[-1].t_s - 1.0]
        static = {int(k): v for k, v in self.session.meta.gpus.items()}
        return recent[-1], {i: label(metrics_of(last, i), static.get(i, GpuStatic()))[0].value
                            for i in self.session.gpus}

    def __exit__(self, *exc: object) -> None:
        from gputriage.diagnosis.run_judge import judge

        assert self.session is not None
        self.report = judge(self.session.finish(), None, budget=self._budget)
        self.session.save(self.report)
        if self._db is not None:
            self._db.close()


def show(run_id: int, store: "str | Path | None" = None) -> RunReport:
    """A stored run's report; a run whose gputriage died (or from an older store) is judged from the
    samples it kept."""
    import msgspec

    from gputriage.diagnosis.run_judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.monitor.session import replay

    db = _store(store, readonly=True)
    assert db is not None
    try:
        row = db.run(run_id)
        if row is None:
            raise GputriageError(f"no run {run_id} in {db.path}")
        if row["report"]:
            return msgspec.json.decode(row["report"], type=RunReport)
        try:
            meta = msgspec.convert(row["meta"], RunMeta)
        except msgspec.ValidationError:
            meta = RunMeta(gpus={k: msgspec.convert(v, dict) for k, v in (row["meta"].get("gpus") or {}).items()})  # type: ignore[misc]
        rec = replay(db.samples(run_id), meta, kind=row["kind"], command=row["command"], run_id=run_id)
        return judge(rec, row["exit_code"], complete=row["complete"])
    finally:
        db.close()


def runs(store: "str | Path | None" = None, limit: int = 50) -> list[dict[str, object]]:
    """The runs and watches kept in the store, newest first."""
    db = _store(store, readonly=True)
    assert db is not None
    try:
        return db.runs(limit)
    finally:
        db.close()


def bench(*, quick: bool = False, disk: "str | Path | None | bool" = None, gpu: bool = True,
          store: "str | Path | None | bool" = None,
          progress: Callable[[str], None] = lambda _what: None) -> BenchReport:
    """The machine's ceilings against its datasheet (see `probes`); `progress` hears what runs now."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.diagnosis import bench as judge
    from gputriage.model.bench import BenchError, BenchResult, GpuProcess
    from gputriage.model.probe import ProbeResult
    from gputriage.model.specs import match
    from gputriage.monitor.sampler import Cadences, Sampler
    from gputriage.monitor.session import gpu_static
    from gputriage.probes import bench as b
    from gputriage.probes import disk as d

    target = Path(disk) if isinstance(disk, (str, Path)) else Path(os.getcwd())
    if disk is not False and not target.is_dir():
        raise GputriageError(f"{target}: not a directory")
    nvml = PynvmlBackend(record=False, bounded=False)
    gpus, info, system = gpu_static(nvml)
    g0 = info.get(0)
    pci = nvml.call("nvmlDeviceGetPciInfo_v3", 0) if gpus else None
    dev_id = f"0x{int(pci['pciDeviceId']) >> 16:04x}" if isinstance(pci, dict) else None
    spec = match(dev_id, g0.memory_total_bytes, g0.name) if g0 else None
    link = (g0.pcie_gen_max, g0.pcie_width_max) if g0 and g0.pcie_gen_max and g0.pcie_width_max else None
    results: list[ProbeResult] = []
    errors: list[dict[str, str]] = []
    others = b.others_on_gpus(nvml, gpus) if gpus and gpu else []  # no CUDA context of ours yet
    if gpus and gpu:
        sampler = Sampler(nvml, Host(), gpus[:1], cadences=Cadences(gpu_s=0.1, ring_s=3600.0))
        sampler.start()
        progress("GPU probes (torch in a child process)")
        bus = pci.get("busId", "").lower()[4:] if isinstance(pci, dict) else None
        rows = b.run_gpu_child(quick, lambda row: progress(f"GPU: {row.get('probe')}"), numa=b.numa_layout(bus))
        if len(gpus) > 1 and not quick:
            progress(f"NCCL all-reduce over {len(gpus)} GPUs")
            rows += b.run_collectives(lambda row: None)
        sampler.stop()
        seen = {o["pid"] for o in others}
        others += [o for o in b.others_on_gpus(nvml, gpus) if o["pid"] not in seen]  # the child has exited
        res, errs = b.to_results(rows, list(sampler.recent), spec, link)
        results += res
        errors += errs
    elif not gpus:
        errors.append({"probe": "gpu", "error": f"no GPU ({system.get('nvml', 'NVML sees none')}): host probes only"})
    if disk is not False:
        progress(f"disk reads in {target}")
        try:
            results += d.probe(target, size_bytes=(128 << 20) if quick else (512 << 20), seconds=1.5 if quick else 4.0)
        except (ValueError, OSError) as exc:
            errors.append({"probe": "disk", "error": str(exc)})
    progress("host memory copy")
    results.append(d.host_memcpy((128 << 20) if quick else (512 << 20)))
    link_now = None
    if gpus:
        gen, width = nvml.call("nvmlDeviceGetCurrPcieLinkGeneration", 0), nvml.call("nvmlDeviceGetCurrPcieLinkWidth", 0)
        link_now = (gen, width) if isinstance(gen, int) and isinstance(width, int) else None
        nvml.shutdown()
    found = judge.findings(results, link_now, others)
    machine = socket.gethostname() + "|" + ",".join(str(info[i].uuid) for i in gpus)
    changes: dict[str, float] = {}
    db = None
    try:
        db = _store(store)
    except GputriageError as exc:
        errors.append({"probe": "store", "error": str(exc)})
    if db is not None:
        previous = db.last_bench(machine)
        changes = judge.compare(results, previous["results"] if previous else None)
        db.add_bench(machine, [r.to_json() for r in results])
        db.close()
    return BenchReport(
        gpu=g0.name if g0 else None, spec=spec.name if spec else None, quick=quick,
        results=[BenchResult(**r.to_json(), band=list(bd) if (bd := judge.band(r.name)) else None,
                             change_pct=changes.get(r.name)) for r in results],
        errors=[BenchError(e.get("probe", "?"), e.get("error", "")) for e in errors],
        other_processes=[GpuProcess(gpu=o["gpu"], pid=o["pid"], used_bytes=o.get("used_bytes")) for o in others],
        findings=found)


def catalog(command: str | None = None) -> Catalog:
    """Every finding id a command (or any command) can report, with what it means and what to do."""
    from gputriage.diagnosis.catalog import for_command

    return Catalog(rules=for_command(command))
