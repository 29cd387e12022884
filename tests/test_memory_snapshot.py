"""An allocator snapshot read (`gputriage.memory`): its figures (fragmentation as pytorch#29554 asks), the Python
line each block belongs to, the phase of a stack, the device chosen, the history replayed — on snapshots written
by hand in the format torch/cuda/memory.py documents, and on any shape a file may take."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputriage.memory.analyze import analyze
from gputriage.memory.frames import attribute, kind, phase
from gputriage.memory.safe_pickle import SnapshotError
from gputriage.memory.snapshot import parse, read
from gputriage.model.memory import NO_PYTHON, NO_STACK, Frame
from gputriage.testing.memory_cases import CASES

MIB = 1 << 20
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
USER = "/home/me/train.py"


def frame(file: str, line: int, name: str = "f") -> dict:
    return {"filename": file, "line": line, "name": name}


def block(size: int, state: str = "active_allocated", frames: list | None = None) -> dict:
    return {"address": 0, "size": size, "requested_size": size, "state": state, "frames": frames or []}


def segment(blocks: list[dict], device: int = 0, pool: str = "large") -> dict:
    return {
        "device": device,
        "address": 1 << 40,
        "total_size": sum(b["size"] for b in blocks),
        "stream": 0,
        "segment_type": pool,
        "blocks": blocks,
    }


def test_fragmentation_is_one_minus_the_largest_free_block_over_the_free_cached_bytes():
    snap = parse(
        {
            "segments": [
                segment([block(100 * MIB), block(30 * MIB, "inactive"), block(50 * MIB), block(10 * MIB, "inactive")]),
                segment([block(60 * MIB, "inactive"), block(40 * MIB)]),
            ]
        }
    )
    s = analyze(snap)
    assert s.reserved_bytes == 290 * MIB and s.allocated_bytes == 190 * MIB
    assert s.cached_free_bytes == 100 * MIB and s.largest_free_bytes == 60 * MIB
    assert s.fragmentation == pytest.approx(1 - 60 / 100)
    assert s.allocated_share == pytest.approx(190 / 290, abs=1e-4)


def test_small_pool_blocks_do_not_count_for_a_large_request():
    snap = parse(
        {
            "segments": [segment([block(MIB), block(MIB, "inactive")], pool="small"), segment([block(40 * MIB)])],
            "device_traces": [[{"action": "oom", "size": 64 * MIB, "device_free": 0, "stream": 0, "frames": []}]],
        }
    )
    s = analyze(snap)
    assert s.oom is not None and s.oom.requested_bytes == 64 * MIB
    assert s.cached_free_bytes == 0 and s.largest_free_bytes == 0  # the 1 MiB hole serves small requests only


def test_a_block_belongs_to_the_innermost_line_outside_torch_and_the_standard_library():
    frames = [
        Frame(f"{TORCH}/nn/modules/linear.py", 125, "forward"),
        Frame("/usr/lib/python3.11/contextlib.py", 81, "inner"),
        Frame(USER, 42, "step"),
        Frame(USER, 90, "<module>"),
    ]
    assert attribute(frames) == ((USER, 42, "step"), True, None)


def test_a_library_s_model_line_carries_the_workload_line_that_called_it():
    frames = [
        Frame(f"{TORCH}/nn/functional.py", 2200, "linear"),
        Frame("/opt/conda/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", 310, "forward"),
        Frame(f"{TORCH}/nn/modules/module.py", 1762, "_call_impl"),
        Frame(USER, 57, "train_step"),
    ]
    key, own, via = attribute(frames)
    assert key[1] == 310 and not own and via == f"{USER}:57"


def test_blocks_without_frames_or_without_python_frames_are_named_so():
    assert attribute([])[0][0] == NO_STACK
    assert attribute([Frame(f"{TORCH}/autograd/graph.py", 823, "_engine_run_backward")])[0][0] == NO_PYTHON


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            [(f"{TORCH}/optim/adam.py", "_init_group"), (f"{TORCH}/optim/optimizer.py", "wrapper"), (USER, "s")],
            "optimizer_first_step",
        ),
        ([(f"{TORCH}/optim/adam.py", "_multi_tensor_adam"), (USER, "s")], "optimizer"),
        ([(f"{TORCH}/autograd/graph.py", "_engine_run_backward"), (f"{TORCH}/_tensor.py", "backward")], "backward"),
        ([(f"{TORCH}/nn/modules/linear.py", "forward"), (f"{TORCH}/nn/modules/module.py", "_call_impl")], "forward"),
        ([(USER, "collate")], "other"),
    ],
)
def test_the_phase_of_a_stack(stack, expected):
    assert phase([Frame(f, 1, fn) for f, fn in stack]) == expected


def test_file_kinds_are_told_by_their_paths_alone():
    assert kind("<frozen importlib._bootstrap>") == "stdlib"
    assert kind("/usr/lib/python3.12/threading.py") == "stdlib"
    assert kind("/usr/lib/python3/dist-packages/numpy/core.py") == "library"
    assert kind(f"{TORCH}/nn/modules/module.py") == "torch"
    assert kind("/tmp/torchinductor_me/ab/cabc.py") == "torch"
    assert kind("/srv/gputriage/src/gputriage/inworkload/memory_history.py") == "gputriage"
    assert kind(USER) == "own"


def test_the_device_that_ran_out_of_memory_is_the_one_read():
    snap = parse(
        {
            "segments": [segment([block(500 * MIB)], device=0), segment([block(50 * MIB)], device=1)],
            "device_traces": [[], [{"action": "oom", "size": 100 * MIB, "device_free": 0, "frames": []}]],
        }
    )
    assert analyze(snap).device == 1
    assert analyze(snap, device=0).reserved_bytes == 500 * MIB


def test_a_snapshot_of_segments_alone_is_read():
    """The older format: the list of segments (memory_viz reads it too)."""
    s = analyze(parse([segment([block(10 * MIB, frames=[frame(USER, 3)])])]))
    assert s.top_lines[0].line == 3 and s.series is None


def test_what_is_not_a_snapshot_is_said_in_one_line(tmp_path):
    for value in ({"device_traces": []}, 42, "segments", {"segments": "x"}):
        path = tmp_path / "x.pickle"
        path.write_bytes(pickle.dumps(value))
        with pytest.raises(SnapshotError) as exc:
            read(path)
        assert "not an allocator snapshot" in str(exc.value) and "\n" not in str(exc.value)


def test_the_replayed_history_ends_at_the_snapshot_s_live_bytes():
    """Blocks allocated before the history began count from its start: the replay is offset to meet the end."""
    snap, _ = CASES["growing"][0]()
    ring = snap["device_traces"][0]
    snap["device_traces"][0] = ring[len(ring) // 2 :]  # the ring wrapped: the first half of the events lost
    s = analyze(parse(snap))
    assert s.series is not None and s.series.total_bytes[-1] <= s.allocated_bytes
    assert max(s.series.total_bytes) == s.allocated_bytes
    assert s.series.by_line[0][-1] == s.top_lines[0].bytes


def test_events_without_times_are_replayed_in_their_order():
    snap, _ = CASES["growing"][0]()
    for e in snap["device_traces"][0]:
        del e["time_us"]
    s = analyze(parse(snap))
    assert s.series is not None and s.growth is not None and s.growth.grown_bytes > 0


FIELD = st.one_of(
    st.none(), st.integers(-(2**70), 2**70), st.text(max_size=5), st.lists(st.integers(), max_size=3), st.booleans()
)
BLOCK = st.fixed_dictionaries(
    {},
    optional={
        "size": FIELD,
        "state": st.sampled_from(["active_allocated", "inactive", "active_pending_free", "x"]) | FIELD,
        "frames": st.lists(st.dictionaries(st.sampled_from(["filename", "line", "name"]), FIELD), max_size=3) | FIELD,
        "requested_size": FIELD,
    },
)
SEGMENT = st.fixed_dictionaries(
    {"blocks": st.lists(BLOCK | FIELD, max_size=5)},
    optional={"device": FIELD, "total_size": FIELD, "segment_type": FIELD, "stream": FIELD, "address": FIELD},
)
EVENT = st.fixed_dictionaries(
    {"action": st.sampled_from(["alloc", "free_completed", "oom", "segment_alloc"]) | FIELD},
    optional={"addr": FIELD, "size": FIELD, "time_us": FIELD, "frames": FIELD, "device_free": FIELD},
)


@settings(max_examples=300, deadline=None)
@given(segments=st.lists(SEGMENT | FIELD, max_size=4), traces=st.lists(st.lists(EVENT | FIELD, max_size=6), max_size=3))
def test_any_shape_of_fields_is_read_without_an_error(segments, traces):
    """A field of the wrong type counts as absent; the analysis never fails on a file's contents."""
    snap = parse({"segments": segments, "device_traces": traces})
    s = analyze(snap)
    assert s.reserved_bytes >= 0 and s.allocated_bytes >= 0 and s.cached_free_bytes >= 0
    assert s.fragmentation is None or 0 <= s.fragmentation <= 1
