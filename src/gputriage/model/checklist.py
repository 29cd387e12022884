"""A checklist: the playbook's steps for a sane GPU box, stable inference and reliable training, each
decided by a measurement where one decides it (pass / fail / unknown, with its evidence and the
command that decided it), else asked of the person."""

from __future__ import annotations

import enum
from typing import Any

import msgspec

CHECKLIST_SCHEMA = "gputriage.checklist"
CHECKLIST_VERSION = 1


class Status(str, enum.Enum):
    passed = "pass"
    failed = "fail"
    unknown = "unknown"  # a measurement would decide it, and none was given (a run, a snapshot)
    question = "question"  # no measurement decides it: for the person


class Item(msgspec.Struct, kw_only=True, omit_defaults=True):
    step: int
    text: str
    status: Status
    why: str = ""  # what decided it, in a sentence
    decided_by: str = ""  # the command whose measurement decided it
    evidence: dict[str, Any] = {}


class ChecklistReport(msgspec.Struct, kw_only=True):
    schema: str = CHECKLIST_SCHEMA
    version: int = CHECKLIST_VERSION
    kind: str  # box, training or inference
    items: list[Item] = []
