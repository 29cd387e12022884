"""A chunk of events filed into the columns in C (`_filing.c`), where the package was built with a C compiler.

The same columns, names, shapes and counts as the Python of `columns.append`: the fields read from the events'
slots, names and shapes interned in the same order under the same keys. A chunk holding anything that Python mends
(a null, a thread named rather than numbered, a number beyond its column) is left to it whole, nothing appended.
Without the module (a checkout not installed, an install without a compiler), every chunk is filed in Python.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import TYPE_CHECKING, Any, Optional

from gputriage.trace.events import GPU_CATS, RUNTIME_CATS
from gputriage.trace.op_cost import NEVER_LAUNCH

if TYPE_CHECKING:
    from gputriage.trace.columns import Columns

try:
    from gputriage.trace import _filing
except ImportError:
    _filing = None  # type: ignore[assignment]

FLOW_CATS = frozenset({"ac2g", "fwdbwd"})  # Kineto's flow arrows (two of every five events): only counted
# The C module's category codes: a GPU activity's kind, a framework op, a runtime or driver call, a flow arrow
# (32 + its index in FLOW_ORDER); the other categories are left for Python to read
FLOW_ORDER = tuple(sorted(FLOW_CATS))
CODES = {
    **GPU_CATS,
    "cpu_op": 16,
    **dict.fromkeys(RUNTIME_CATS, 17),
    **{cat: 32 + k for k, cat in enumerate(FLOW_ORDER)},
}
GPU_COLUMNS = ("g_ts", "g_dur", "g_name", "g_kind", "g_dev", "g_corr", "g_ext", "g_bpsm")
CALL_COLUMNS = ("r_ts", "r_dur", "r_name", "r_tid", "r_corr")
OP_COLUMNS = ("o_ts", "o_dur", "o_name", "o_tid", "o_ext", "o_shape")
SIZES = {"d": 8, "q": 8, "i": 4, "f": 4, "b": 1}  # the bytes the C module packs each array type code in
if any(array(code).itemsize != size for code, size in SIZES.items()):  # a platform whose arrays differ
    _filing = None  # type: ignore[assignment]


def file_in_c(cols: Columns, events: list[Any]) -> Optional[tuple[list[Any], Counter[str], int]]:
    """Fill the columns with a chunk's GPU activities, calls and ops, in C. What is left for Python (the events of
    other categories, the flow arrows counted by category, how many activities and calls there were), or None
    where the chunk is Python's to file whole."""
    if _filing is None:
        return None
    filed = _filing.file_chunk(events, CODES, cols._name_ids, cols.names, cols._shape_ids, cols.shapes, NEVER_LAUNCH)
    if filed is None:
        return None
    rest, flows, gpu, calls, ops, least_call_ts, least_op_ts = filed
    for names, values in ((GPU_COLUMNS, gpu), (CALL_COLUMNS, calls), (OP_COLUMNS, ops)):
        for name, packed in zip(names, values):
            getattr(cols, name).frombytes(packed)
    n_calls, n_ops = len(calls[0]) // 8, len(ops[0]) // 8
    if n_calls:
        cols.note_least("r_ts", least_call_ts, n_calls)
    if n_ops:
        cols.note_least("o_ts", least_op_ts, n_ops)
    return rest, Counter({FLOW_ORDER[k]: n for k, n in flows}), len(gpu[0]) // 8 + n_calls
