"""The environment a fleet node's check judges is the user's job's, not Ray's own: on a real local Ray cluster
(CPU only, each node's check run live in a Ray worker), OMP_NUM_THREADS=1 that Ray's worker sets itself where the
node's environment has none is not `env.costly_variable`; the same variable set in the node's environment is, and
so is CUDA_LAUNCH_BLOCKING=1 wherever the node sets it. Where the raylet's environment cannot be read, Ray's known
worker setting tells them apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputriage.backends.host import Host
from gputriage.fleet.worker_env import WORKER_SETS, set_by_ray

GT = [sys.executable, "-m", "gputriage"]
NAMES = ("OMP_NUM_THREADS", "CUDA_LAUNCH_BLOCKING")


def _proc_root(tmp: Path, pid: int, env: dict[str, str]) -> Host:
    """A machine whose raylet (pid) was started with `env`, seen from a worker with Ray's OMP_NUM_THREADS."""
    (tmp / "proc" / str(pid)).mkdir(parents=True)
    (tmp / "proc" / str(pid) / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
    worker = {**env, "RAY_RAYLET_PID": str(pid), "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")}
    return Host(root=tmp, environ=worker)


def test_the_raylets_environment_tells_rays_settings_from_the_nodes(tmp_path: Path) -> None:
    ray_set = _proc_root(tmp_path / "a", 41, {"CUDA_LAUNCH_BLOCKING": "1"})
    assert set_by_ray(ray_set, NAMES) == ({"OMP_NUM_THREADS": "1"}, "ray:/proc/41/environ")
    node_set = _proc_root(tmp_path / "b", 42, {"CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "1"})
    assert set_by_ray(node_set, NAMES) == ({}, "ray:/proc/42/environ")
    assert set_by_ray(Host(environ={"OMP_NUM_THREADS": "1"}), NAMES) == ({}, "")  # not in a Ray worker


def test_without_the_raylets_environment_rays_known_setting_is_taken_as_rays(tmp_path: Path) -> None:
    worker = Host(root=tmp_path, environ={"RAY_RAYLET_PID": "43", "OMP_NUM_THREADS": "1", "CUDA_LAUNCH_BLOCKING": "1"})
    engine, source = set_by_ray(worker, NAMES)
    assert engine == {k: v for k, v in WORKER_SETS.items() if k in NAMES} and "worker defaults" in source
    worker.environ["OMP_NUM_THREADS"] = "4"  # not what Ray sets for the fleet's task: the node's
    assert set_by_ray(worker, NAMES)[0] == {}


try:
    import ray  # noqa: F401
    from ray.cluster_utils import Cluster
except ImportError:
    Cluster = None
    assert os.environ.get("GPUTRIAGE_REQUIRE_RAY") != "1", "ray is needed (pip install gputriage[fleet])"


@pytest.fixture(scope="module")
def cluster():
    """A head without GPUs and two GPU nodes (as Ray counts them) that check this machine live: one whose
    environment sets OMP_NUM_THREADS=1, one whose environment has none (Ray's worker sets it); both set
    CUDA_LAUNCH_BLOCKING=1."""
    if Cluster is None:
        pytest.skip("ray is not installed (pip install gputriage[fleet])")
    with pytest.MonkeyPatch.context() as mp:
        for name in (*NAMES, "GPUTRIAGE_FLEET_REPLAY", "GPUTRIAGE_FLEET_REPLAY_BENCH"):
            mp.delenv(name, raising=False)  # the nodes inherit this process's environment: only theirs counts
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
        user = c.add_node(num_cpus=1, num_gpus=1, env_vars={"OMP_NUM_THREADS": "1", "CUDA_LAUNCH_BLOCKING": "1"})
        bare = c.add_node(num_cpus=1, num_gpus=1, env_vars={"CUDA_LAUNCH_BLOCKING": "1"})
        c.wait_for_nodes()
    yield c, user.node_id, bare.node_id
    c.shutdown()


def test_a_fleet_check_blames_the_nodes_environment_not_rays_own(cluster) -> None:
    c, user, bare = cluster
    r = subprocess.run(
        GT + ["fleet", "check", "--ray", c.address, "--json", "--no-store", "--fail-on", "never"],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k not in NAMES},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    nodes = {n["node_id"]: n for n in json.loads(r.stdout)["nodes"]}
    assert set(nodes) == {user, bare} and all(n["ok"] for n in nodes.values()), r.stdout[-3000:]

    def costly(node_id: str) -> set[str]:
        return {k for f in nodes[node_id]["findings"] if f["id"] == "env.costly_variable" for k in f["evidence"]}

    assert costly(user) == {"env.OMP_NUM_THREADS", "env.CUDA_LAUNCH_BLOCKING"}  # the node's own settings
    assert costly(bare) == {"env.CUDA_LAUNCH_BLOCKING"}  # OMP_NUM_THREADS=1 there is Ray's
