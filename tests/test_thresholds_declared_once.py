"""Each threshold is declared once, with its meaning and source, and the catalog's prose is built from its value:
no `condition`, `symptom`, `cause` or `decision` of a catalog entry writes one of its thresholds' numbers by hand
(change the threshold, and the words change with it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gputriage
from gputriage.diagnosis import catalog

PROSE = ("condition", "symptom", "cause", "decision")
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
SRC = Path(gputriage.__file__).parent


def literal_numbers(node: ast.expr) -> list[float]:
    """Numbers written by hand in a string argument (the constant parts of an f-string included)."""
    parts: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            parts.append(sub.value)
    return [float(m) for p in parts for m in NUMBER.findall(p)]


def entries_in_source() -> list[tuple[Path, str, dict[str, ast.expr]]]:
    out = []
    for path in sorted((SRC / "diagnosis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            ident = kw.get("id")
            if isinstance(ident, ast.Constant) and isinstance(ident.value, str) and "condition" in kw:
                out.append((path, ident.value, kw))
    return out


def test_the_scan_sees_the_catalog() -> None:
    """Entries made in a loop (`run.<bottleneck>`, budgets) have no literal id; the rest are scanned."""
    found = {ident for _, ident, _ in entries_in_source()}
    assert len(found & set(catalog.entries())) >= 0.6 * len(catalog.entries())


def test_no_threshold_number_is_written_by_hand_in_the_catalogs_prose() -> None:
    entries = catalog.entries()
    repeated = []
    for path, ident, kw in entries_in_source():
        spec = entries.get(ident)
        if spec is None or not spec.thresholds:
            continue
        values = {t.value for t in spec.thresholds} | {t.value * 100 for t in spec.thresholds if t.value < 1}
        for field in PROSE:
            if field in kw:
                hits = [n for n in literal_numbers(kw[field]) if n in values]
                if hits:
                    repeated.append(f"{path.relative_to(SRC)} {ident}.{field}: {hits}")
    assert not repeated, "build these from the threshold's value:\n" + "\n".join(repeated)


def test_every_threshold_has_a_meaning_and_a_source() -> None:
    for spec in catalog.entries().values():
        for t in spec.thresholds:
            assert t.meaning and t.source and t.unit, (spec.id, t.name)


def test_the_pressure_rules_list_their_thresholds() -> None:
    entries = catalog.entries()
    assert [t.name for t in entries["cpu.pressure"].thresholds] == ["cpu_psi_some_avg10_pct"]
    assert [t.name for t in entries["mem.pressure"].thresholds] == ["mem_psi_some_avg10_pct"]
