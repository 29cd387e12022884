"""What the API's functions share: its errors, and opening the store and a budget."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputriage.diagnosis.budget import Budget
    from gputriage.sampling.store import Store


class GputriageError(Exception):
    """Something the caller gave cannot be used (a file, a store, a command)."""


class WorkloadError(GputriageError):
    """The workload could not be started; `exit_code` is the shell's (127: not found, 126: not runnable)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def open_store(store: str | Path | bool | None, readonly: bool = False) -> Store | None:
    """`store`: a path, None (or True) for the default store, False for none."""
    if store is False:
        return None
    from gputriage.sampling.store import Store, StoreError

    try:
        return Store(None if store is None or store is True else store, readonly=readonly)
    except StoreError as exc:
        hint = "" if readonly else "; give another --store, or --no-store to go without keeping it"
        raise GputriageError(f"{exc}{hint}") from None


def open_budget(budget: str | Path | None) -> Budget | None:
    if budget is None:
        return None
    from gputriage.diagnosis.budget import BudgetError, load_budget

    try:
        return load_budget(budget)
    except BudgetError as exc:
        raise GputriageError(str(exc)) from None
