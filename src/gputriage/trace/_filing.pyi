"""Filing decoded Kineto events into columns, in C (`columns.append`'s fast path; module doc of `_filing.c`)."""

from collections.abc import Set
from typing import Any, Optional

def file_chunk(
    events: list[Any],
    codes: dict[str, int],
    name_ids: dict[str, int],
    names: list[str],
    shape_ids: dict[Any, int],
    shapes: list[Any],
    never: Set[str],
) -> Optional[
    tuple[list[Any], list[tuple[int, int]], tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...], float, float]
]: ...
