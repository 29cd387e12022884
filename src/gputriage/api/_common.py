"""What the API's functions share: its errors, and opening the store and a budget."""

from __future__ import annotations

import math
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from pathlib import Path

    from gputriage.diagnosis.budget import Budget
    from gputriage.sampling.store import Store

# the store, the budget, the config file's parser and msgspec are imported where they are used: the errors
# below are all that `trace` and most commands need from here, and those imports cost more than the read of a
# small trace

T = TypeVar("T")


class GputriageError(Exception):
    """Something the caller gave cannot be used (a file, a store, a command)."""


class UsageError(GputriageError):
    """The options asked for something that cannot be (a pattern that is not one, --profile of a non-Python
    command): the command line's fault, not an input file's."""


class NoStoreError(GputriageError):
    """The run store to read is not there (nothing was kept in it yet)."""


class WorkloadError(GputriageError):
    """The workload could not be started; `exit_code` is the shell's (127: not found, 126: not runnable)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def open_store(store: str | Path | bool | None, readonly: bool = False) -> Store | None:
    """`store`: a path, None (or True) for the default store, False for none."""
    from gputriage.sampling.store import MissingStoreError, Store, StoreError

    if store is False:
        return None
    try:
        db = Store(None if store is None or store is True else store, readonly=readonly)
        if not readonly:
            try:
                db.check_writable()  # a read-only file: said now, before any long work, not after it
            except StoreError:
                db.close()
                raise
        return db
    except MissingStoreError as exc:
        raise NoStoreError(str(exc)) from None
    except StoreError as exc:
        hint = "" if readonly else "; give another --store, or --no-store to go without keeping it"
        raise GputriageError(f"{exc}{hint}") from None


def open_budget(budget: str | Path | None) -> Budget | None:
    from gputriage.diagnosis.budget import BudgetError, load_budget

    if budget is None:
        return None
    try:
        return load_budget(budget)
    except BudgetError as exc:
        raise GputriageError(str(exc)) from None


CONFIG_ENV = "GPUTRIAGE_CONFIG"


def config_path() -> Path:
    """The user's config file: $GPUTRIAGE_CONFIG, else config.toml in the user config folder."""
    from pathlib import Path

    from platformdirs import user_config_dir

    return Path(os.environ.get(CONFIG_ENV) or Path(user_config_dir("gputriage")) / "config.toml")


def _config_table(name: str) -> tuple[Path, dict[str, Any]]:
    """The config file and its `[name]` table (empty where the file or the table is absent); GputriageError for a
    file that cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    path = config_path()
    if not path.exists():
        return path, {}
    try:
        table = tomllib.loads(path.read_text()).get(name, {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GputriageError(f"{path}: cannot read the config file: {exc}") from None
    if not isinstance(table, dict):
        raise GputriageError(f"{path}: [{name}] must be a table")
    return path, table


def _number(x: object, least: float, strict: bool) -> bool:
    """A finite number (not a bool) above `least` (`strict`) or at least `least`."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return False
    return x > least if strict else x >= least


def configured_price() -> tuple[float | None, str]:
    """The price per GPU-hour and its currency under `[cost]` in the config file (None: no price set; none is
    assumed). A file that cannot be read or holds a wrong price is a GputriageError."""
    path, cost = _config_table("cost")
    price, currency = cost.get("price_per_gpu_hour"), cost.get("currency", "USD")
    if price is not None and not _number(price, 0.0, strict=False):
        raise GputriageError(f"{path}: [cost] price_per_gpu_hour must be a number >= 0, not {price!r}")
    if not isinstance(currency, str):
        raise GputriageError(f"{path}: [cost] currency must be text, not {currency!r}")
    return (float(price) if price is not None else None), currency


def _configured_seconds(given_s: float | None, name: str, table: str, key: str, unit_s: float) -> float | None:
    """A duration in seconds: `given_s` where given (a command's option, checked > 0), else `[table] key` in the
    config file (in units of `unit_s` seconds, checked > 0), else None (the threshold's)."""
    if given_s is not None:
        if not _number(given_s, 0.0, strict=True):
            raise UsageError(f"{name} must be a number of seconds > 0, not {given_s!r}")
        return float(given_s)
    path, values = _config_table(table)
    value = values.get(key)
    if value is None:
        return None
    if not _number(value, 0.0, strict=True):
        raise GputriageError(f"{path}: [{table}] {key} must be a number > 0, not {value!r}")
    return float(value) * unit_s


def configured_idle_held_min_s(given_s: float | None = None) -> float | None:
    """How long a process must hold GPU memory idle to be named, in seconds: `given_s` where given (`--idle-after`),
    else `[idle_held] after_minutes` in the config file, else None (the threshold's, 10 min)."""
    return _configured_seconds(given_s, "idle_held_min_s", "idle_held", "after_minutes", 60.0)


def configured_hang_after_s(given_s: float | None = None) -> float | None:
    """How long ranks of a distributed job wait in a collective for others before the job is said to hang, in
    seconds: `given_s` where given (`--hang-after`), else `[hang] after_seconds` in the config file, else None (the
    threshold's, `hang_after_s`)."""
    return _configured_seconds(given_s, "hang_after_s", "hang", "after_seconds", 1.0)


def check_store(store: str | Path | bool | None) -> None:
    """Before long work whose result goes to the store: GputriageError now if it cannot be opened and written."""
    db = open_store(store)
    if db is not None:
        db.close()


def keep_report(report: Any, kind: str, command: list[str], store: str | Path | bool | None) -> None:
    """A finished report of another kind than a run (a load test, a fleet check) kept in the store, its id set;
    a store that cannot be opened or written is a note in the report, not an error (the measurement is not
    lost)."""
    import sqlite3

    if store is False:
        return
    try:
        db = open_store(store)
    except GputriageError as exc:
        report.notes.append(f"not kept: {exc}")
        return
    if db is None:
        return
    try:
        db.add_report(kind, command, report)
    except sqlite3.Error as exc:
        report.notes.append(f"not kept: cannot write the run store {db.path}: {exc}")
    finally:
        db.close()


def read_store(store: str | Path | None, read: Callable[[Store], T]) -> T:
    """`read(db)` on the store opened read-only, closed after; a damaged store is a one-line error."""
    import sqlite3

    db = open_store(store, readonly=True)
    assert db is not None
    try:
        return read(db)
    except sqlite3.DatabaseError as exc:
        raise GputriageError(f"{db.path}: the run store is damaged ({exc})") from None
    finally:
        db.close()


def stored_row(record_id: int, store: str | Path | None = None) -> dict[str, Any] | None:
    """A stored record's row (see `Store.run`), or None."""
    return read_store(store, lambda db: db.run(record_id))


def stored_report(record_id: int, kind: str, report_type: type, store: str | Path | None = None) -> Any:
    """A report kept in the store by `keep_report` (a load test, a fleet check), decoded."""
    import msgspec

    row = stored_row(record_id, store)
    if row is None or row["kind"] != kind:
        raise GputriageError(f"no {kind} {record_id} in the store")
    try:
        return msgspec.json.decode(row["report"] or b"", type=report_type)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise GputriageError(f"{kind} {record_id}: its report is damaged ({exc})") from None
