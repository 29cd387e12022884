"""A window asked of a run whose workload has not used CUDA (`gputriage profile RUN`, SIGUSR1 to `gputriage run`) is
answered at once, in one line, exit 3, and no window is asked: the profiler would otherwise wait for CUDA for as
long as the workload runs, and the trace promised would never come."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from gputriage.model.run import RunMeta
from gputriage.runner.gate_keeper import GateKeeper, workload_state
from gputriage.runner.profiled import read_profile
from gputriage.sampling.store import Store
from waiting import stored_run, wait_for

GT = [sys.executable, "-m", "gputriage"]
SRC = str(Path(__file__).parent.parent / "src")

# the hook's own view, in a fresh interpreter (torch faked in its sys.modules, as a workload would import it)
HOOK_STATES = """
import sys, types
from gputriage.inworkload.profiler_hook import Profiler
out = sys.argv[1]
p = Profiler(out + "/trace.json", cuda=True, gate=out + "/gate")
said = [p.ready()]
torch = types.ModuleType("torch")
torch.__spec__ = types.SimpleNamespace(_initializing=True)
cuda = [False]
torch.cuda = types.SimpleNamespace(is_initialized=lambda: cuda[0])
sys.modules["torch"] = torch
said.append(p.ready())
torch.__spec__._initializing = False
said += [p.ready(), p.ready()]
cuda[0] = True
said.append(p.ready())
print(said, Profiler(out + "/cpu.json", cuda=False).ready())
"""

NO_TORCH = """
import os, time
t = time.time()
while time.time() - t < 150 and not os.path.exists("stop"):
    time.sleep(0.05)
print("done")
"""


def test_the_hook_says_whether_it_could_start_each_time_that_changes(tmp_path):
    r = subprocess.run(
        [sys.executable, "-c", HOOK_STATES, str(tmp_path)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=SRC),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[False,", "False,", "False,", "False,", "True]", "True"]  # CPU profiling: torch
    assert (tmp_path / "trace.json.state").read_text().split() == ["no_torch", "importing", "no_cuda", "ready"]
    assert workload_state(tmp_path) == "ready"


def test_before_any_hook_said_anything_the_run_asks_as_before():
    assert workload_state(Path("/nonexistent")) is None  # no hook has said anything: asked as before


def _state(folder: Path, **by_file: str) -> Path:
    for name, said in by_file.items():
        (folder / f"{name}.json.state").write_text(said)
    return folder


def test_of_several_ranks_one_ready_is_enough(tmp_path):
    assert workload_state(_state(tmp_path, trace="no_torch\n")) == "no_torch"
    assert workload_state(_state(tmp_path, **{"trace.rank1": "no_torch\nno_cuda\n"})) == "no_cuda"
    assert workload_state(_state(tmp_path, **{"trace.rank2": "no_torch\nimporting\n"})) == "importing"
    assert workload_state(_state(tmp_path, **{"trace.rank0": "no_cuda\nready\n"})) == "ready"


def _running_run(where: Path, gate: Path) -> tuple[Path, int]:
    """A store holding a run that runs (no end yet), its requests taken in `gate`."""
    where.mkdir(exist_ok=True)
    store_path = where / "runs.sqlite"
    db = Store(store_path)
    rid = db.begin_run("run", ["python", "serve.py"], RunMeta(profile_gate=str(gate), gputriage_pid=os.getpid()))
    db.close()
    return store_path, rid


def test_a_request_to_a_workload_without_cuda_is_answered_at_once_and_asks_no_window(tmp_path):
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / "trace.json.state").write_text("no_torch\nno_cuda\n")  # torch imported, CUDA never initialized
    store_path, rid = _running_run(tmp_path / "store", folder)
    session = SimpleNamespace(meta=RunMeta(), gpus=[], windows=SimpleNamespace(series={}), run_id=rid)
    said: list[str] = []
    keeper = GateKeeper(session, folder, "auto", say=said.append)  # type: ignore[arg-type]
    try:
        # --wait 300: the answer comes from the run, not from waiting it out (the bound below is generous)
        profile = GT + ["profile", str(rid), "--store", str(store_path), "--wait", "300"]
        r = subprocess.run(profile, capture_output=True, text=True, timeout=120)
        assert r.returncode == 3 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"gputriage: run {rid} has nothing to profile: ")
        assert "has not used CUDA" in r.stderr and "trace" not in r.stderr
        r = subprocess.run(profile + ["--json"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 3 and json.loads(r.stdout)["state"] == "no_cuda"
        keeper.request()  # SIGUSR1 to `gputriage run`
        wait_for(lambda: len(said) == 3, "the signal answered")
    finally:
        keeper.stop()
    assert said[2].startswith("no profile window (asked by SIGUSR1 to gputriage run): the workload has not used CUDA")
    assert keeper.gate.asked == 0 and keeper.outs == {} and not (folder / "gate").exists()  # nothing asked of it
    assert list((folder / "asks").iterdir()) == []  # requests taken, answers read and removed
    report = read_profile(folder, None, "auto", keeper=keeper)
    assert report.windows == [] and sum("no window asked" in line for line in report.log) == 3


def test_gputriage_run_of_a_workload_that_never_imports_torch_answers_profile_and_sigusr1_at_once(tmp_path):
    (tmp_path / "idle.py").write_text(NO_TORCH)
    store_path = tmp_path / "runs.sqlite"
    run = subprocess.Popen(
        GT + ["run", "--store", str(store_path), "--json", "--", sys.executable, "idle.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def gate() -> Path | None:
            row = stored_run(store_path)
            return Path(row["meta"]["profile_gate"]) if row and row["meta"].get("profile_gate") else None

        wait_for(lambda: gate() is not None, "the run's row in the store")
        folder = gate()
        assert folder is not None
        wait_for(lambda: workload_state(folder) is not None, "the workload's hook said whether it could start")
        r = subprocess.run(
            GT + ["profile", "1", "--store", str(store_path), "--wait", "300"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.poll() is None and not (tmp_path / "stop").exists()  # answered while the workload runs on
        assert r.returncode == 3 and r.stderr.count("\n") == 1
        assert "run 1 has nothing to profile: the workload has not imported torch" in r.stderr
        os.kill(run.pid, signal.SIGUSR1)
    finally:
        (tmp_path / "stop").write_text("")
        stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr[-2000:]
    assert "no profile window (asked by SIGUSR1 to gputriage run): the workload has not imported torch" in stderr
    assert "its trace will be written" not in stderr
    profile = json.loads(stdout)["profile"]
    assert profile.get("windows", []) == [] and profile.get("asked", []) == []
    refused = [line for line in profile["log"] if line.startswith("no window asked")]
    assert len(refused) == 2 and "gputriage profile, pid" in refused[0] and "SIGUSR1" in refused[1]
    assert all("the workload has not imported torch: no GPU work to profile (ask again" in line for line in refused)
    assert not list(tmp_path.glob("gputriage-*profile*.json"))  # no trace file promised, none written
