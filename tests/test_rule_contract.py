"""The rule contract every judged subject keeps (`gputriage.diagnosis.rule`): a finding is one module of its
subject's `rules` package, registered by being there; its words come from its catalog entry, filled from the
evidence; its prose names its thresholds instead of writing their numbers; no number decides a verdict without a
`Threshold`; judges stay short; renderers do not judge."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gputriage
from gputriage.diagnosis import catalog
from gputriage.diagnosis.rule import SUBJECTS, rules_of

SRC = Path(gputriage.__file__).parent
DIAGNOSIS = SRC / "diagnosis"
MAX_FUNCTION_LINES = 80
PLAIN_NUMBERS = {0, 1, -1, 100, 1000, 1e6, 1e9, 60, 3600, 1024}  # counts, percent and unit conversions


def has_rules(subject: str) -> bool:
    return (DIAGNOSIS / subject / "rules" / "__init__.py").exists()


def rule_modules(subject: str) -> list[Path]:
    return sorted(p for p in (DIAGNOSIS / subject / "rules").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_every_module_of_a_rules_package_is_a_rule_in_the_catalog(subject: str) -> None:
    if not has_rules(subject):
        pytest.skip(f"{subject} has no rules package yet")
    rules = rules_of(subject)
    assert len(rules) == len(rule_modules(subject))
    entries = catalog.entries()
    for rule in rules:
        for spec in rule.specs:
            assert spec.id in entries, spec.id


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_copied_rule_module_with_a_new_id_is_in_gputriage_rules_with_no_other_file_edited(
    subject: str, tmp_path: Path
) -> None:
    """Copy the package, add one file to the subject's rules (a copy of its first rule with another id), and ask the
    command line of the copy for its catalog."""
    if not has_rules(subject):
        pytest.skip(f"{subject} has no rules package yet")
    copy = tmp_path / "gputriage"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = rule_modules(subject)[0]
    rule_id = next(r.id for r in rules_of(subject) if r.evaluate.__module__.endswith("." + first.stem))
    text = first.read_text().replace(f'"{rule_id}"', f'"{rule_id}_copy"')
    assert f'"{rule_id}_copy"' in text, f"{first.name} does not write its id {rule_id!r} as a literal"
    (copy / "diagnosis" / subject / "rules" / f"zz_{first.stem}_copy.py").write_text(text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "gputriage", "rules", "--json", f"{rule_id}_copy"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)["rules"]] == [f"{rule_id}_copy"]


# entries whose prose still writes a threshold's number by hand (shrinks to nothing; never grows)
PROSE_TO_CONVERT: set[str] = set()


def test_the_catalogs_prose_names_its_thresholds_instead_of_writing_their_numbers() -> None:
    """`{finding_min_pct:g}` in a condition follows the threshold; "10%" written by hand (or an f-string of its
    value, which writes the same) would not. Positional and loop-made entries are checked alike: this reads the
    entries themselves, not the source."""
    raw = catalog.raw_entries()
    offenders = {ident: spec.hand_written() for ident, spec in raw.items() if spec.hand_written()}
    new = {k: v for k, v in offenders.items() if k not in PROSE_TO_CONVERT}
    assert not new, f"name these thresholds as fields: {new}"


def test_a_changed_threshold_changes_the_words_of_the_catalog() -> None:
    """The catalog renders the fields with the threshold's value of the moment."""
    from gputriage.model.finding import FindingSpec, Severity, Threshold, Wording

    t = Threshold("finding_min_pct", 12.0, "%", "m", "s")
    spec = FindingSpec(
        id="x.y",
        step=2,
        severity=Severity.warn,
        symptom="s",
        cause="c",
        decision="d",
        commands=("trace",),
        condition="idle >= {finding_min_pct:g}% of the window",
        thresholds=(t,),
        says={"idle": Wording(symptom="GPU idle {idle_pct}% (over {finding_min_pct:g}%)")},
    )
    assert spec.rendered().condition == "idle >= 12% of the window"
    assert spec.finding(say="idle", fill={"idle_pct": 31.5}).symptom == "GPU idle 31.5% (over 12%)"
    hand = FindingSpec(**{**{f: getattr(spec, f) for f in spec.__struct_fields__}, "condition": ">= 12% of it"})
    assert hand.hand_written() == {"condition": [12.0]}


# rule modules whose findings still pass words beside their entry (shrinks to nothing; never grows)
WORDING_TO_CONVERT: set[str] = set()
WORDS = ("symptom", "cause", "decision")


def words_beside_the_entry(path: Path) -> list[str]:
    """`.finding(..., symptom=...)` calls: words written at the place of emission, not in the entry."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finding":
            out += [f"line {node.lineno}: {k.arg}=" for k in node.keywords if k.arg in WORDS]
    return out


def test_a_rules_words_come_from_its_entry() -> None:
    beside = {}
    for subject in SUBJECTS:
        if not has_rules(subject):
            continue
        for path in rule_modules(subject):
            where = str(path.relative_to(DIAGNOSIS))
            found = words_beside_the_entry(path)
            if found and where not in WORDING_TO_CONVERT:
                beside[where] = found
    assert not beside, f"say these through the entry (`says`, `say=`, `fill=`): {beside}"


def long_functions() -> dict[str, int]:
    out = {}
    for path in sorted(DIAGNOSIS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out[f"{path.relative_to(DIAGNOSIS)}:{node.name}"] = n
    return out


LONG_TO_SPLIT: set[str] = set()


def test_no_function_in_diagnosis_is_over_80_lines() -> None:
    new = {k: v for k, v in long_functions().items() if k not in LONG_TO_SPLIT}
    assert not new, f"split these into steps a reader can follow: {new}"


def deciding_numbers(path: Path) -> list[str]:
    """Numbers that decide: a literal in a comparison (either side, at any depth: `x >= 2 * y`), or a module-level
    name bound to a bare number — outside a `Threshold(...)` declaration, and but for the plain ones (counts,
    halves, unit conversions)."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                for sub in ast.walk(operand):
                    if isinstance(sub, ast.Constant) and type(sub.value) in (int, float):
                        if sub.value not in PLAIN_NUMBERS:
                            out.append(f"line {sub.lineno}: {sub.value!r} in a comparison")
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            if isinstance(value, ast.UnaryOp):
                value = value.operand
            if isinstance(value, ast.Constant) and type(value.value) in (int, float):
                out.append(f"line {node.lineno}: module-level number {value.value!r}")
    return out


NUMBERS_TO_DECLARE: set[str] = set()


def test_no_number_decides_a_verdict_without_a_threshold() -> None:
    found = {}
    for path in sorted(DIAGNOSIS.rglob("*.py")):
        where = str(path.relative_to(DIAGNOSIS))
        numbers = deciding_numbers(path)
        if numbers and where not in NUMBERS_TO_DECLARE:
            found[where] = numbers
    assert not found, f"declare these as Thresholds (meaning, source): {found}"


REPORT_JUDGES: set[str] = set()  # renderers that still ask a judge's question (shrinks to nothing)


def test_renderers_draw_models_and_import_no_judge() -> None:
    found = {}
    for path in sorted((SRC / "report").rglob("*.py")):
        text = path.read_text()
        if re.search(r"^\s*(from|import) gputriage\.diagnosis", text, re.M) and path.name not in REPORT_JUDGES:
            found[path.name] = [line for line in text.splitlines() if "gputriage.diagnosis" in line]
    assert not found, found
