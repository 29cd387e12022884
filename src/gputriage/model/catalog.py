"""`rules --json`: the catalog of every finding any command can report."""

from __future__ import annotations

import msgspec

from gputriage.model.finding import FindingSpec

CATALOG_SCHEMA = "gputriage.rules"
CATALOG_VERSION = 2


class Catalog(msgspec.Struct, kw_only=True):
    schema: str = CATALOG_SCHEMA
    version: int = CATALOG_VERSION
    rules: list[FindingSpec] = []
