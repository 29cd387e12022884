"""The documentation: rules.md is the catalog as `gputriage rules --markdown` prints it, the README is the first
screen and stays small, and the mkdocs site builds with no broken link (CI: GPUTRIAGE_REQUIRE_DOCS=1)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputriage import api
from gputriage.model.catalog import Catalog
from gputriage.model.finding import FindingSpec, Severity, Threshold
from gputriage.report.rules_markdown import rules_markdown

ROOT = Path(__file__).parent.parent
RULES_MD = ROOT / "docs" / "rules.md"
README = ROOT / "README.md"
README_MAX_BYTES = 12_288
REGENERATE = "run `gputriage rules --markdown > docs/rules.md`"


def test_rules_page_is_the_catalog():
    assert RULES_MD.read_text(encoding="utf-8") == rules_markdown(api.catalog()), (
        f"docs/rules.md differs from the catalog: {REGENERATE}"
    )


def test_every_finding_id_has_its_section():
    page = RULES_MD.read_text(encoding="utf-8")
    missing = [s.id for s in api.catalog().rules if f"## `{s.id}`" not in page]
    assert not missing, f"not in docs/rules.md: {', '.join(missing)}; {REGENERATE}"


def test_the_command_prints_the_page():
    r = subprocess.run(
        [sys.executable, "-m", "gputriage", "rules", "--markdown"], capture_output=True, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stdout.decode("utf-8") == rules_markdown(api.catalog())


def test_prose_is_escaped_outside_code_spans():
    spec = FindingSpec(
        id="x.y",
        step=1,
        severity=Severity.warn,
        symptom="no /dev/nvidia* node",
        cause="a [bracket] and <b>",
        decision="run `gputriage run -- <cmd>` then <= 5%",
        commands=("check",),
        thresholds=(Threshold("t_pct", 5.0, "%", "a | b", "judgement"),),
    )
    page = rules_markdown(Catalog(rules=[spec]))
    assert "## `x.y`" in page
    assert r"/dev/nvidia\* node" in page
    assert r"a \[bracket\] and &lt;b>" in page
    assert "`gputriage run -- <cmd>` then <= 5%" in page  # a code span as written; "<=" opens no tag
    assert r"| `t_pct` | 5% | a \| b | judgement |" in page


def test_readme_is_the_first_screen():
    data = README.read_bytes()
    assert len(data) <= README_MAX_BYTES, f"README.md is {len(data)} bytes: move detail into docs/"
    head = "\n".join(data.decode("utf-8").splitlines()[:40])
    assert "gputriage run" in head, "the README's first 40 lines should show `gputriage run`"


def test_the_site_builds_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        assert os.environ.get("GPUTRIAGE_REQUIRE_DOCS") != "1", "mkdocs-material is needed (pip install -e '.[docs]')"
        pytest.skip("mkdocs-material is not installed (pip install -e '.[docs]')")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert (tmp_path / "site" / "rules" / "index.html").exists()


def test_readme_first_screen_installs_from_a_clone_runs_a_first_job_and_tests_as_ci_does():
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[:30])
    install = next(line for line in head.splitlines() if "pip install ." in line)
    assert "gputriage run -- python3 examples/first_run.py" in install  # one command: install, then the first job
    assert (ROOT / "examples" / "first_run.py").is_file()
    assert "\n.ci/run\n" in head and os.access(ROOT / ".ci" / "run", os.X_OK)  # one command for the tests
    assert "CONTRIBUTING.md" in head and (ROOT / "CONTRIBUTING.md").is_file()
    assert "--index-url" not in README.read_text(encoding="utf-8")  # nothing beyond the package index
