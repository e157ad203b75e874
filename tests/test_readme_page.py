"""The README is a user's page: short, with no commit ids, issue numbers or dated entries (those live
in the results files, docs/ and the CHANGELOG), and code comments keep no diary either.

A line the README may not have: a commit id (7–40 hex characters with a digit and a letter), an
issue or pull-request number (``#27``, ``issue 41``), a date (``2026-12-04``, ``4 December``,
``Dec 2026``). Citations keep their year ("Yao et al., 2022"). Every row of the results table
names a command and links a study page that exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 350
PACKAGES = ("agentenvs", "agents", "wrappers")

MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
DIARY = {
    "commit id": re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "issue number": re.compile(r"(?i)\b(?:issues?|pr|pull request)\s*#?\d+\b|(?<![\w&/#])#[1-9]\d*\b"),
    "date": re.compile(rf"\b\d{{4}}-\d\d-\d\d\b|\b\d{{1,2}} {MONTH} \d{{4}}\b|\b{MONTH} \d{{1,2}},? \d{{4}}\b"),
}


def diary_entries(text: str) -> list[str]:
    """What in a text is a commit id, an issue number or a date, as ``kind: match``.

    Example:
        >>> diary_entries("0.62x before issue #27's work (95e5ccf), 2026-12-04; Yao et al., 2022; bf16")
        ['commit id: 95e5ccf', 'issue number: issue #27', 'date: 2026-12-04']
        >>> diary_entries("see [the reading](docs/a.md#the-reading); colour #000; 1000003 tasks; PR 12")
        ['issue number: PR 12']
    """
    found = []
    for kind, pattern in DIARY.items():
        found += [f"{kind}: {match.group(0)}" for match in pattern.finditer(text)]
    return found


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines, at most {MAX_LINES}: move readings to docs/"


def test_the_readme_has_no_diary():
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), start=1):
        assert not diary_entries(line), f"README.md:{number}: {diary_entries(line)} belongs in results or the CHANGELOG"


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """Each ``#`` comment and docstring of a module, with its line."""
    source = path.read_text(encoding="utf-8")
    found = [
        (number, line[line.index("#") :])
        for number, line in enumerate(source.splitlines(), start=1)
        if "#" in line and line.lstrip().startswith("#")
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append((node.body[0].lineno, docstring))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_code_comments_have_no_diary(package):
    entries = [
        f"{path.relative_to(ROOT)}:{number}: {entry}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, text in _comments_and_docstrings(path)
        for entry in diary_entries(text)
    ]
    assert not entries, "diary entries in code comments (move them to the results or the CHANGELOG):\n" + "\n".join(
        entries
    )


def _results_rows() -> list[str]:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Results") :]
    return [line for line in table.splitlines() if line.startswith("| **")]


def test_every_results_row_has_its_command_and_an_existing_reading():
    rows = _results_rows()
    assert len(rows) >= 5
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 4, f"a results row has study | result | command | reading: {row[:80]}"
        assert "`" in cells[2], f"no command in the row {cells[0]}"
        targets = re.findall(r"\]\(([^)#]+)", cells[3])
        assert targets, f"no link to a reading in the row {cells[0]}"
        for target in targets:
            assert (ROOT / target).is_file(), f"the row {cells[0]} links {target}, which does not exist"
