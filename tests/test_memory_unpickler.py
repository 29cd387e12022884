"""A snapshot is read as plain data only (`gputriage.memory.safe_pickle`): a pickle that would import, call or
build anything is refused in one line, exit 3, and nothing of it runs — whatever opcodes carry the attempt, at any
protocol, wherever in the data it hides."""

from __future__ import annotations

import copyreg
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputriage.memory.safe_pickle import RefusedPickle, SnapshotError, bounded_memory, loads_plain, read_plain

CANARY = Path(os.environ.get("TMPDIR", "/tmp")) / f"gputriage-canary-{os.getpid()}"


class Evil:
    """An object whose unpickling runs a command: the classic payload."""

    def __init__(self, how: str) -> None:
        self.how = how

    def __reduce__(self):  # type: ignore[no-untyped-def]
        if self.how == "system":
            return (os.system, (f"touch {CANARY}",))
        if self.how == "exec":
            return (exec, (f"open({str(CANARY)!r}, 'w').close()",))
        return (open, (str(CANARY), "w"))


class Stateful:
    """An object rebuilt with BUILD (its __setstate__) and NEWOBJ."""

    def __setstate__(self, state):  # type: ignore[no-untyped-def]
        CANARY.touch()


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4) | st.tuples(inner, inner)
    ),
    max_leaves=20,
)


def _embed(value, evil):  # type: ignore[no-untyped-def]
    """`evil` somewhere inside a plain value, as a snapshot's frame or block might carry it."""
    return {"segments": [{"blocks": [value, {"frames": [evil]}]}], "device_traces": [[value]]}


@pytest.fixture(autouse=True)
def _no_canary():
    CANARY.unlink(missing_ok=True)
    yield
    assert not CANARY.exists(), "a refused pickle ran code"
    CANARY.unlink(missing_ok=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=plain, protocol=st.integers(0, 5), how=st.sampled_from(["system", "exec", "open"]))
def test_a_payload_hidden_in_plain_data_is_refused_at_every_protocol(value, protocol, how):
    data = pickle.dumps(_embed(value, Evil(how)), protocol=protocol)
    modules = set(sys.modules)
    with pytest.raises(RefusedPickle) as refused:
        loads_plain(data, "snap.pickle")
    assert "\n" not in str(refused.value) and "refused" in str(refused.value)
    assert set(sys.modules) == modules  # nothing imported
    assert not CANARY.exists()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=plain, protocol=st.integers(0, 5))
def test_plain_data_reads_back_as_it_was(value, protocol):
    assert loads_plain(pickle.dumps(value, protocol=protocol)) == value


def _u(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw  # SHORT_BINUNICODE


def _crafted() -> dict[str, bytes]:
    """Pickles written opcode by opcode: each way a pickle reaches a callable or an object."""
    cmd = f"touch {CANARY}".encode()
    return {
        "GLOBAL+REDUCE": b"cos\nsystem\n(S'" + cmd + b"'\ntR.",
        "STACK_GLOBAL+REDUCE": b"\x80\x04" + _u("os") + _u("system") + b"\x93" + _u(cmd.decode()) + b"\x85R.",
        "INST": b"(S'" + cmd + b"'\nios\nsystem\n.",
        "OBJ": b"\x80\x02(cos\nsystem\nS'" + cmd + b"'\no.",
        "NEWOBJ": b"\x80\x02c" + Stateful.__module__.encode() + b"\nStateful\n)\x81}b.",
        "BUILD on a global": b"\x80\x02c" + Stateful.__module__.encode() + b"\nStateful\n)R}b.",
        "REDUCE of a plain value": b"\x80\x02X\x06\x00\x00\x00systemX\x03\x00\x00\x00lsl\x85R.",
        "BUILD on a plain list": b"\x80\x02]}X\x01\x00\x00\x00a\x88sb.",
        "PERSID": b"Pos.system\n.",
        "BINPERSID": b"\x80\x02X\x02\x00\x00\x00idQ.",
        "EXT1": b"\x80\x02\x82\xf0.",
        "builtins.eval": b'cbuiltins\neval\n(S\'__import__("os").system("touch ' + str(CANARY).encode() + b"\")'\ntR.",
        "memo index of 2**31": b"\x80\x02Nr" + struct.pack("<I", 0x7FFFFFF0) + b".",
    }


@pytest.mark.parametrize("name", sorted(_crafted()))
def test_each_way_to_an_object_is_refused_and_runs_nothing(name):
    copyreg.add_extension("os", "system", 0xF0)
    try:
        data = _crafted()[name]
        with pytest.raises(SnapshotError) as refused:
            if name == "memo index of 2**31":  # only the bounded read (the command's) refuses it for what it costs
                path = Path(os.environ.get("TMPDIR", "/tmp")) / f"memo-{os.getpid()}.pickle"
                path.write_bytes(data)
                try:
                    read_plain(path, bounded=True)
                finally:
                    path.unlink()
            else:
                loads_plain(data, "snap.pickle")
    finally:
        copyreg.remove_extension("os", "system", 0xF0)
    assert "\n" not in str(refused.value)
    if name not in ("memo index of 2**31",):
        assert isinstance(refused.value, RefusedPickle), str(refused.value)


@pytest.mark.parametrize("name", ["GLOBAL+REDUCE", "STACK_GLOBAL+REDUCE", "NEWOBJ", "memo index of 2**31"])
def test_the_command_refuses_in_one_line_with_exit_3(name, tmp_path):
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(_crafted()[name])
    out = subprocess.run(
        [sys.executable, "-m", "gputriage", "memory", str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 3, out.stderr
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and str(path) in out.stderr
    assert not CANARY.exists()


def _bounded(data: bytes) -> None:
    """Random bytes may hold a memo index that sizes the memo for billions of entries: read as the command does."""
    with bounded_memory(len(data)):
        loads_plain(data)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_bytes_are_read_or_refused_never_an_error_of_another_kind(data):
    try:
        _bounded(data)
    except SnapshotError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=60, deadline=None)
@given(value=plain, cut=st.integers(1, 400))
def test_a_cut_or_corrupted_pickle_is_one_line(value, cut):
    data = pickle.dumps(_embed(value, 1), protocol=4)
    for broken in (data[: max(1, len(data) - cut)], data[:cut] + b"\xff" + data[cut + 1 :]):
        try:
            _bounded(broken)
        except SnapshotError as exc:
            assert "\n" not in str(exc)
