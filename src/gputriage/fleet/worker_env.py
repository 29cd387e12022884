"""What Ray sets in its own workers, told from what the node's environment (the user's, which every job on the
node inherits) sets: a check that runs inside a Ray worker reads the engine's settings beside the user's, and only
the user's are the job's to change.

Ray's worker sets OMP_NUM_THREADS to the CPUs its task asked for (1 for a task that asks for none, as the fleet's
does) when the environment it was started from has none (`ray._private.utils.set_omp_num_threads_if_unset`, Ray
2.x). A worker's environment is its raylet's, plus what Ray adds: the raylet's own environment
(/proc/RAY_RAYLET_PID/environ, the process that starts the workers) tells the two apart. Where it cannot be read,
Ray's known worker settings do."""

from __future__ import annotations

from gputriage.backends.host import Host

RAYLET_PID = "RAY_RAYLET_PID"  # in every Ray worker's environment: the raylet that started it
# what a Ray worker sets itself when the node's environment has none, for a task that asks for no CPU (the fleet's)
WORKER_SETS = {"OMP_NUM_THREADS": "1"}


def set_by_ray(host: Host, names: tuple[str, ...]) -> tuple[dict[str, str], str]:
    """Of the variables `names` this process has (`host.environ`), those Ray set itself ({name: value}), and where
    that was read (a fact's source); ({}, "") outside a Ray worker. A variable the raylet's environment holds with
    the same value is the node's, whoever set it there."""
    environ = host.environ
    pid = environ.get(RAYLET_PID, "")
    if not pid.isdigit():
        return {}, ""
    mine = {n: environ[n] for n in names if n in environ}
    node = host.process_environ(int(pid), names)
    if isinstance(node, dict):
        return {n: v for n, v in mine.items() if node.get(n) != v}, f"ray:/proc/{pid}/environ"
    known = {n: v for n, v in mine.items() if WORKER_SETS.get(n) == v}
    return known, "ray:worker defaults (the raylet's environment unreadable)"
